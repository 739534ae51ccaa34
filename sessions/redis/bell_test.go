package redis

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/agentgate/agentgate/sessions"
)

// silentListener accepts connections and never answers on them: a Redis
// whose connections hang. accepted closes at its first connection; the
// listener and its connections close at the end of the test (registered
// after the Stores, before their Close).
func silentListener(t *testing.T) (addr string, accepted <-chan struct{}) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	first := make(chan struct{})
	var (
		mu    sync.Mutex
		conns []net.Conn
	)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			if conns == nil {
				close(first)
			}
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return ln.Addr().String(), first
}

// Waiters in line keep polling, and can give up on their context, while
// their Store's subscription to the line's channel is being made: the
// subscriber dials without the bell's lock. Here the subscription's server
// never answers (its connection would hang for an hour), while the
// waiters' polls reach the real one; the waiter that made the bell dial
// and one that came after leave on their cancelled contexts, and the one
// behind them gets the lease, released on the other replica, by its poll.
func TestLineWaitersLeaveWhileBellDials(t *testing.T) {
	_, _, other, lease := heldByReplica(t, 10*time.Minute)
	addr, dialled := silentListener(t)
	silent := goredis.NewClient(&goredis.Options{Addr: addr, DialTimeout: time.Hour, ReadTimeout: time.Hour, WriteTimeout: time.Hour})
	t.Cleanup(func() { _ = silent.Close() })
	other.bell.client = silent

	var tickets [3]sessions.Ticket
	for i := range tickets {
		ticket, err := other.Join(t.Context(), "app", "u", "s1", 0)
		if err != nil {
			t.Fatal(err)
		}
		defer ticket.Leave()
		tickets[i] = ticket
	}
	type result struct {
		lease sessions.Lease
		err   error
	}
	acquire := func(ctx context.Context, ticket sessions.Ticket) <-chan result {
		got := make(chan result, 1)
		go func() {
			l, err := ticket.Acquire(ctx)
			got <- result{l, err}
		}()
		return got
	}
	within := func(got <-chan result, what string) result {
		t.Helper()
		select {
		case r := <-got:
			return r
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: Acquire did not return", what)
			return result{}
		}
	}

	firstCtx, cancelFirst := context.WithCancel(t.Context())
	defer cancelFirst()
	first := acquire(firstCtx, tickets[0])
	select {
	case <-dialled:
	case <-time.After(10 * time.Second):
		t.Fatal("the bell did not dial its subscription")
	}
	secondCtx, cancelSecond := context.WithCancel(t.Context())
	defer cancelSecond()
	second := acquire(secondCtx, tickets[1])
	thirdCtx, cancelThird := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancelThird()
	third := acquire(thirdCtx, tickets[2])

	cancelFirst()
	cancelSecond()
	for i, got := range []<-chan result{first, second} {
		if r := within(got, "a cancelled waiter"); !errors.Is(r.err, context.Canceled) {
			t.Fatalf("waiter %d, cancelled while the bell dials: err = %v, want context.Canceled", i+1, r.err)
		}
		tickets[i].Leave()
	}
	lease.Release()
	r := within(third, "the waiter behind them")
	if r.err != nil {
		t.Fatalf("Acquire once the lease was released, while the bell dials: %v", r.err)
	}
	r.lease.Release()
}
