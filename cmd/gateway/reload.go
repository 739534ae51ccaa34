package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"log/slog"
	"os"
	"os/signal"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentgate/agentgate/agentcore/a2a"
	"github.com/agentgate/agentgate/agentcore/spec"
	"github.com/agentgate/agentgate/config"
	"github.com/agentgate/agentgate/gateway"
	"github.com/agentgate/agentgate/gateway/metrics"
)

// reloader re-reads the config file and swaps the agent trees the gateway
// serves: on SIGHUP, and when the file changes (server.watch_config). The
// providers, agents and models are reloaded; a config that does not load
// or build is refused, its problems logged one per line, and the one
// before keeps serving. Requests already running finish on the trees they
// started with; remote agents use the new endpoints from their next call.
// Other sections (server, sessions, auth, log) take effect on a restart;
// a reload that changes them says so in the log.
type reloader struct {
	path   string
	lookup func(string) (string, bool)
	// adjust applies the flags and environment that override the file.
	adjust  func(*config.Config)
	opts    spec.BuildOptions
	srv     *gateway.Server
	remotes *a2a.Remotes
	log     *slog.Logger
	// tools brackets each build (Begin, then Commit once the new catalog
	// serves, or Rollback); metrics learns the new names. Both optional.
	tools   *toolMakers
	metrics *metrics.Metrics

	mu     sync.Mutex
	cur    *config.Config
	tried  [sha256.Size]byte // content of the file last loaded or refused
	hasTry bool
}

// reload loads the file and serves it; why says what asked for it.
func (r *reloader) reload(why string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	data, err := os.ReadFile(r.path)
	if err == nil {
		r.tried, r.hasTry = sha256.Sum256(data), true
	}
	return r.apply(why, data, err)
}

func (r *reloader) apply(why string, data []byte, readErr error) error {
	cfg, err := (*config.Config)(nil), readErr
	if err == nil {
		cfg, err = config.Parse(data, r.lookup)
	}
	var cat *spec.Catalog
	if err == nil {
		r.adjust(cfg)
		if r.tools != nil {
			r.tools.Begin()
		}
		cat, err = spec.Build(cfg.Spec(), r.opts)
		if err == nil {
			err = r.srv.Reload(cat)
		}
		if r.tools != nil {
			end := r.tools.Commit
			if err != nil {
				end = r.tools.Rollback
			}
			if cerr := end(); cerr != nil {
				r.log.Warn("closing MCP toolsets after a reload", "err", cerr)
			}
		}
	}
	if err != nil {
		problems := strings.Split(strings.TrimSpace(err.Error()), "\n")
		for _, p := range problems {
			r.log.Error("configuration refused: "+strings.TrimSpace(p), "path", r.path, "reason", why)
		}
		r.log.Warn("configuration not reloaded; the previous one keeps serving", "path", r.path, "reason", why, "problems", len(problems))
		return err
	}
	r.remotes.Apply(cfg.Spec())
	if r.metrics != nil {
		r.metrics.SetSpec(cfg.Spec())
	}
	if r.cur != nil {
		if changed := restartOnly(r.cur, cfg); len(changed) > 0 {
			r.log.Warn("configuration reloaded, but these sections take effect on a restart", "sections", changed)
		}
	}
	r.cur = cfg
	r.log.Info("configuration reloaded", "path", r.path, "reason", why, "models", len(cat.Apps))
	return nil
}

// restartOnly lists the sections that differ between two configs and are
// not reloaded.
func restartOnly(old, cur *config.Config) []string {
	var out []string
	for name, pair := range map[string][2]any{"server": {old.Server, cur.Server}, "sessions": {old.Sessions, cur.Sessions},
		"auth": {old.Auth, cur.Auth}, "log": {old.Log, cur.Log}} {
		if !reflect.DeepEqual(pair[0], pair[1]) {
			out = append(out, name)
		}
	}
	return out
}

// changed reports whether the file's content differs from what was last
// loaded or refused. The file is small: reading it is cheaper than
// trusting modification times (coarse, and equal for same-size rewrites).
func (r *reloader) changed() bool {
	data, err := os.ReadFile(r.path)
	if err != nil {
		return false
	}
	sum := sha256.Sum256(data)
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.hasTry || !bytes.Equal(sum[:], r.tried[:])
}

// remember records the file as it is now: the content the running
// config came from.
func (r *reloader) remember(cur *config.Config) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cur = cur
	if data, err := os.ReadFile(r.path); err == nil {
		r.tried, r.hasTry = sha256.Sum256(data), true
	}
}

// watch reloads on SIGHUP and, when interval > 0, when the file changes,
// until ctx ends. The signal handler is installed when it returns; the
// work goes on in a goroutine.
func (r *reloader) watch(ctx context.Context, interval time.Duration) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	var ticker *time.Ticker
	var tick <-chan time.Time
	if interval > 0 {
		ticker = time.NewTicker(interval)
		tick = ticker.C
	}
	go func() {
		defer signal.Stop(hup)
		if ticker != nil {
			defer ticker.Stop()
		}
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				_ = r.reload("SIGHUP")
			case <-tick:
				if r.changed() {
					_ = r.reload("file changed")
				}
			}
		}
	}()
}
