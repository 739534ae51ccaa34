package redis

import (
	"context"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// lineBell wakes a Store's waiters when their session's line may let one
// of them in. The scripts that release a lease to a line with waiters (see
// lineLib's free), take a ticket out of a line (leave) or drop tickets from
// it (DropAhead, evict) PUBLISH on the line's key, a channel of the same
// name; one subscription per Store (per replica), made when a waiter first
// needs it and closed when the last one leaves, hears the channels its
// waiters wait on. A publish is a command
// of the script that already changes the line, so it costs no round trip,
// and a turn that finds its session free publishes nothing (its release
// finds the line empty).
//
// Why PUBLISH rather than a blocking list pop: a pop needs a connection
// blocked per waiter and a push per waiter to wake, while a Store's
// waiters, on every session, share the one subscription, and a release
// wakes every waiter of its session in one publish (those not first in
// line poll once and wait again, as they did).
//
// A message can be lost (sent while the subscription reconnects) or never
// sent (a holder that died: its lease expires); waiters still poll, every
// bellPoll once subscribed, for those.
type lineBell struct {
	client goredis.UniversalClient
	mu     sync.Mutex
	ps     *goredis.PubSub // nil until a waiter needs it
	subs   map[string]*bellSub
	closed bool
}

// bellSub is one channel's subscription, shared by the Store's waiters on
// it.
type bellSub struct {
	n int // waiters
	// ready is closed once Redis confirmed the subscription: from then on
	// a change of the line reaches rung.
	ready chan struct{}
	// rung is closed, and replaced, at each message.
	rung chan struct{}
}

// defaultBellPoll is how often a subscribed waiter polls when no message
// wakes it (bounded by lineAlive, see bellPoll).
const defaultBellPoll = time.Second

// join subscribes a waiter to channel ch; nil when the Store is closed
// (the waiter polls).
func (b *lineBell) join(ch string) *bellSub {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	sub := b.subs[ch]
	if sub == nil {
		sub = &bellSub{ready: make(chan struct{}), rung: make(chan struct{})}
		if b.subs == nil {
			b.subs = map[string]*bellSub{}
		}
		b.subs[ch] = sub
		if b.ps == nil {
			b.ps = b.client.Subscribe(context.Background(), ch)
			go b.listen(b.ps)
		} else {
			// A failure shows as no confirmation: the waiter polls.
			_ = b.ps.Subscribe(context.Background(), ch)
		}
	}
	sub.n++
	return sub
}

// leave unsubscribes a waiter that joined ch (sub, from join).
func (b *lineBell) leave(ch string, sub *bellSub) {
	if sub == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	sub.n--
	if sub.n > 0 || b.subs[ch] != sub {
		return
	}
	delete(b.subs, ch)
	switch {
	case b.ps == nil || b.closed:
	case len(b.subs) == 0:
		// No waiter left: the connection goes, until the next one.
		_ = b.ps.Close()
		b.ps = nil
	default:
		_ = b.ps.Unsubscribe(context.Background(), ch)
	}
}

// state is what a waiter waits on before it polls: whether the channel is
// subscribed, and the channel closed at the next message.
func (b *lineBell) state(sub *bellSub) (ready bool, rung <-chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case <-sub.ready:
		ready = true
	default:
	}
	return ready, sub.rung
}

// listen hands the subscription's messages to the waiters, until it is
// closed. A confirmation of a channel already subscribed follows a
// reconnection, which may have lost messages: it wakes the waiters too.
func (b *lineBell) listen(ps *goredis.PubSub) {
	for m := range ps.ChannelWithSubscriptions() {
		var ch string
		switch m := m.(type) {
		case *goredis.Subscription:
			if m.Kind != "subscribe" {
				continue
			}
			ch = m.Channel
		case *goredis.Message:
			ch = m.Channel
		default:
			continue
		}
		b.mu.Lock()
		if sub := b.subs[ch]; sub != nil {
			select {
			case <-sub.ready:
				close(sub.rung)
				sub.rung = make(chan struct{})
			default:
				if _, ok := m.(*goredis.Subscription); ok {
					close(sub.ready)
				} else {
					close(sub.rung)
					sub.rung = make(chan struct{})
				}
			}
		}
		b.mu.Unlock()
	}
}

// close ends the subscription.
func (b *lineBell) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	if b.ps != nil {
		_ = b.ps.Close()
	}
}
