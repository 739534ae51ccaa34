package gateway

import "github.com/agentgate/agentgate/runs"

// RunRegistry exposes the server's run registry to the tests.
func (s *Server) RunRegistry() *runs.Registry { return s.runs }

// ResponsesApp is the app the records of stored responses live under.
const ResponsesApp = responsesApp
