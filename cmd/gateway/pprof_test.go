package main

import (
	"fmt"
	"net/http"
	"testing"
)

// -pprof serves Go's profiles on their own listener; the API's listener
// does not serve them.
func TestPprofOnItsOwnListener(t *testing.T) {
	pprofAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	gw := runGateway(t, []string{"-config", "../../config.yaml", "-addr", "127.0.0.1:0", "-pprof", pprofAddr}, nil)
	for url, want := range map[string]int{
		"http://" + pprofAddr + "/debug/pprof/cmdline": http.StatusOK,
		gw.base + "/debug/pprof/cmdline":               http.StatusNotFound,
	} {
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s: %d, want %d", url, resp.StatusCode, want)
		}
	}
	gw.stop(t)
}
