// Command floorproxy is the least an HTTP proxy written with net/http
// does: it passes POST /v1/chat/completions to an OpenAI-compatible
// upstream and copies the answer back, flushing after every read. The load
// test sends the pass-through workloads through it too, so that the report
// shows what one more HTTP hop costs on the machine, before agentgate does
// anything: agentgate's cost over direct can go no lower than this
// proxy's.
//
//	floorproxy -upstream http://127.0.0.1:8001/v1
//
// It listens on a free loopback port and prints one JSON line with the
// address, {"msg":"floorproxy listening","addr":"127.0.0.1:port",
// "echo":"127.0.0.1:port"}. On the second port it echoes each line back
// over plain TCP: the load test measures a round trip between two
// processes with it, the floor under any hop. GET
// /metrics serves the Go runtime's metrics (heap, stacks, goroutines), as
// agentgate's does, so that the load test measures both alike.
//
// -pprof HOST:PORT (env FLOORPROXY_PPROF_ADDR, default off) serves Go's
// profiles and runtime traces (net/http/pprof) on their own listener, as
// agentgate's -pprof does, so that the two can be traced alike under the
// load test.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/agentgate/agentgate/agentcore/model"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

func main() {
	upstream := flag.String("upstream", "", "the upstream's API root, e.g. http://127.0.0.1:8001/v1")
	pprofAddr := flag.String("pprof", os.Getenv("FLOORPROXY_PPROF_ADDR"), "serve Go profiles (net/http/pprof) on HOST:PORT, on loopback (env FLOORPROXY_PPROF_ADDR, default off)")
	flag.Parse()
	if *upstream == "" {
		fmt.Fprintln(os.Stderr, "floorproxy: -upstream is required")
		os.Exit(2)
	}
	if *pprofAddr != "" {
		if err := servePprof(*pprofAddr); err != nil {
			fmt.Fprintln(os.Stderr, "floorproxy: pprof:", err)
			os.Exit(1)
		}
	}
	if err := serve(*upstream); err != nil {
		fmt.Fprintln(os.Stderr, "floorproxy:", err)
		os.Exit(1)
	}
}

func serve(upstream string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	// The transport agentgate's providers use (keep-alive pool, 1 KiB
	// connection buffers), so that the two differ in what they do only.
	client := &http.Client{Transport: model.NewTransport()}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector())
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.Handle("/", newHandler(upstream, client))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	go serveEcho(echo)
	line, _ := json.Marshal(map[string]string{"msg": "floorproxy listening", "addr": ln.Addr().String(), "echo": echo.Addr().String()})
	fmt.Println(string(line))
	go func() {
		<-ctx.Done()
		_ = srv.Close()
		_ = echo.Close()
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// servePprof serves net/http/pprof's handlers on addr, apart from the
// proxied routes.
func servePprof(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return nil
}

// serveEcho writes every line each connection sends back to it.
func serveEcho(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			r := bufio.NewReader(c)
			for {
				line, err := r.ReadSlice('\n')
				if err != nil {
					return
				}
				if _, err := c.Write(line); err != nil {
					return
				}
			}
		}()
	}
}
