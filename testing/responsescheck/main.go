// Command responsescheck checks a Responses API body read from standard
// input against the Open Responses specification, with the checks of
// gateway/openaiwire/responsescheck, for the test suites that are not Go
// (the Node suites check every response and stream their clients get).
//
// Usage:
//
//	responsescheck [-stream [-after N] [-partial]] < body
//
// Without -stream the body is a response object; with it, the SSE body of
// a stream (-after N: a replay after sequence number N; -partial: the
// stream may stop before its terminal event). It prints what is wrong on
// standard error and exits 1, or exits 0.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/agentgate/agentgate/gateway/openaiwire/responsescheck"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stderr))
}

func run(args []string, in io.Reader, stderr io.Writer) int {
	fs := flag.NewFlagSet("responsescheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	stream := fs.Bool("stream", false, "the body is a stream of server-sent events")
	after := fs.Int64("after", -1, "with -stream: the sequence number a replay starts after")
	partial := fs.Bool("partial", false, "with -stream: the stream may stop before its terminal event")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	body, err := io.ReadAll(in)
	if err != nil {
		fmt.Fprintln(stderr, "responsescheck:", err)
		return 2
	}
	if *stream {
		err = responsescheck.Events(responsescheck.Frames(body), responsescheck.StreamOptions{After: *after, Partial: *partial})
	} else {
		err = responsescheck.Response(body)
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	return 0
}
