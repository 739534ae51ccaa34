package gateway

// Shutdown: how a stopping process ends the server's work. Every kind of
// run is a run of the registry (a stream's, a run gone on without its
// client, a background response, an A2A task answered at once), so one
// wait gives them all the grace, and one close ends the rest the same
// way: errorCode SHUTDOWN as the run's last frame, the run failed. The
// compactions the runs start when they end run on the server's
// agentcore.Background: they have the rest of the grace, then are stopped.

import (
	"context"
	"errors"
	"net/http"
	"time"
)

// ShutdownEndWait bounds how long Shutdown waits, once the grace is over,
// for the runs it ended to record their end and for the requests still
// open to write their last frame.
const ShutdownEndWait = 5 * time.Second

// Shutdown stops hs, the http.Server serving s, and the server's runs, for
// a process that is stopping:
//
//  1. re-attaches to runs this process does not run (another replica's, on
//     a shared run log) end at once, after a whole frame: their clients
//     re-attach elsewhere with their cursor;
//  2. hs stops accepting connections, and the requests and the runs of
//     this process, attached to a client or not, may finish until ctx is
//     done (the grace, server.shutdown_grace);
//  3. then the runs still going are cancelled with runs.ErrShutdown (no
//     run starts any more) and each records its end: errorCode SHUTDOWN as
//     its last frame, status failed in the run index, a background
//     response failed with code shutting_down, an A2A task failed; a
//     stream still open gets the error frame; the open requests are
//     waited for, and the connections closed after ShutdownEndWait;
//  4. the session compactions the runs that completed started (in the
//     background, once their response was complete) may finish until ctx
//     is done; those still running then are stopped and waited for, up to
//     ShutdownEndWait (a summary stopped is lost, never half-stored: the
//     next turn of its session runs the compaction again).
//
// It returns nil when everything finished within the grace, else what
// was still open when ShutdownEndWait ran out (nil when nothing was).
func (s *Server) Shutdown(ctx context.Context, hs *http.Server) error {
	s.stopFollowing()
	served := hs.Shutdown(ctx)
	ran := s.runs.Wait(ctx)
	compacted := s.waitCompactions(ctx)
	if served == nil && ran == nil && compacted == nil {
		s.runs.Close() // nothing runs, and no request is left to start a run
		return nil
	}
	end, cancel := context.WithTimeout(context.Background(), ShutdownEndWait)
	defer cancel()
	if compacted != nil {
		s.log.Warn("compactions still running at the end of the grace period are stopped", "running", s.background.Running())
	}
	s.background.Stop() // also those the runs ended below would start
	var errs []error
	if err := s.runs.Shutdown(end); err != nil {
		errs = append(errs, errors.New("gateway: runs still going after the shutdown ended them"))
	}
	if served != nil {
		if err := hs.Shutdown(end); err != nil {
			errs = append(errs, errors.New("gateway: requests still open after the shutdown; their connections are closed"))
			_ = hs.Close()
		}
	}
	if err := s.background.Wait(end); err != nil {
		errs = append(errs, errors.New("gateway: compactions still running after the shutdown stopped them"))
	}
	return errors.Join(errs...)
}

// waitCompactions waits for the compactions running, until ctx is done
// (then its error).
func (s *Server) waitCompactions(ctx context.Context) error {
	n := s.background.Running()
	if n == 0 {
		return nil
	}
	s.log.Info("waiting for compactions", "running", n)
	return s.background.Wait(ctx)
}

// followUntilStop returns ctx, also ended when a shutdown begins unless
// run id is one of this process: a re-attach to another replica's run has
// no reason to hold a stopping process (its client re-attaches
// elsewhere), while one to a run of this process stays for the run's last
// frame (or, for a run that ended, reads the rest of its log). Call the
// returned function once the follow is over.
func (s *Server) followUntilStop(ctx context.Context, id string) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	if _, err := s.runs.Get(ctx, id); err == nil {
		return ctx, cancel
	}
	go func() {
		select {
		case <-s.stopping:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// stopFollowing ends the re-attaches followUntilStop let go at a shutdown.
func (s *Server) stopFollowing() { s.stopOnce.Do(func() { close(s.stopping) }) }
