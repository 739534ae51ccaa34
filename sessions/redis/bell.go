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
	subs   map[string]*bellSub
	// changed tells the subscriber (see subscribe) that subs changed; nil
	// when none runs.
	changed chan struct{}
	// subscriber is the subscriber's goroutine, which close waits for.
	subscriber sync.WaitGroup
	closed     bool
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
// (the waiter polls). It returns at once: the subscriber subscribes.
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
		b.changedSubs()
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
	b.changedSubs()
}

// changedSubs tells the subscriber that subs changed, and starts one if
// none runs. b.mu is held.
func (b *lineBell) changedSubs() {
	switch {
	case b.closed:
	case b.changed == nil:
		b.changed = make(chan struct{}, 1)
		b.subscriber.Add(1)
		go b.subscribe(b.changed)
	default:
		b.wake()
	}
}

// wake wakes the subscriber, if one runs. b.mu is held.
func (b *lineBell) wake() {
	select {
	case b.changed <- struct{}{}:
	default: // woken already, or none runs (changed nil)
	}
}

// subscribe keeps a subscription to the channels of subs, on its own
// goroutine until no waiter is left (the connection goes, until the next
// one) or the bell is closed. Its commands may dial Redis, which can take
// as long as the dial timeout; they run without b.mu, so that a waiter
// never waits for them to join, look at its channel or leave: it polls
// meanwhile, and its context can end its wait.
func (b *lineBell) subscribe(changed <-chan struct{}) {
	defer b.subscriber.Done()
	ps := b.client.Subscribe(context.Background()) // no channel: no dial yet
	listening := false
	asked := map[string]*bellSub{} // the channels subscribed, for which sub
	for {
		var add, drop []string
		b.mu.Lock()
		if b.closed || len(b.subs) == 0 {
			b.changed = nil
			b.mu.Unlock()
			_ = ps.Close()
			return
		}
		for ch, sub := range b.subs {
			// A channel left and joined again since its subscription is
			// asked again: its new waiters need a confirmation.
			if asked[ch] != sub {
				add = append(add, ch)
				asked[ch] = sub
			}
		}
		for ch := range asked {
			if b.subs[ch] == nil {
				drop = append(drop, ch)
				delete(asked, ch)
			}
		}
		b.mu.Unlock()
		if len(add) == 0 && len(drop) == 0 {
			<-changed
			continue
		}
		// A failure shows as no confirmation: the waiters poll.
		if len(add) > 0 {
			_ = ps.Subscribe(context.Background(), add...)
			if !listening {
				listening = true
				go b.listen(ps)
			}
		}
		if len(drop) > 0 {
			_ = ps.Unsubscribe(context.Background(), drop...)
		}
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

// close ends the subscription, once a command under way is done.
func (b *lineBell) close() {
	b.mu.Lock()
	b.closed = true
	b.wake()
	b.mu.Unlock()
	b.subscriber.Wait()
}
