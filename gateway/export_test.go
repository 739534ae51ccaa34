package gateway

import "github.com/agentgate/agentgate/runs"

// RunRegistry exposes the server's run registry to the tests.
func (s *Server) RunRegistry() *runs.Registry { return s.runs }
