// Command stdioserver is an MCP server over stdio for mcptoolset's tests
// (built by the test with go build). Its tools report what the process
// sees: its pid, an environment variable, and one that exits the process
// to simulate a crash.
package main

import (
	"context"
	"log"
	"os"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type envIn struct {
	Name string `json:"name" jsonschema:"the variable to read"`
}

type envOut struct {
	Value string `json:"value"`
	Set   bool   `json:"set"`
}

type pidOut struct {
	PID int `json:"pid"`
}

func main() {
	s := mcp.NewServer(&mcp.Implementation{Name: "stdioserver", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "getenv", Description: "Reads an environment variable of the server."},
		func(ctx context.Context, req *mcp.CallToolRequest, in envIn) (*mcp.CallToolResult, envOut, error) {
			v, ok := os.LookupEnv(in.Name)
			return nil, envOut{Value: v, Set: ok}, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "pid", Description: "The server's process id."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, pidOut, error) {
			return nil, pidOut{PID: os.Getpid()}, nil
		})
	s.AddTool(&mcp.Tool{Name: "crash", Description: "Exits the server right after answering.", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			go func() { time.Sleep(20 * time.Millisecond); os.Exit(3) }()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "bye"}}}, nil
		})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Print(err)
	}
}
