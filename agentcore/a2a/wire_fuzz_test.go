package a2a

import (
	"bytes"
	"encoding/json"
	"testing"
	"testing/iotest"
)

// a2aSeeds are JSON-RPC requests and results of both versions.
var a2aSeeds = []string{
	`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","role":"user","messageId":"m1","parts":[{"kind":"text","text":"hi"}]},"configuration":{"blocking":false,"historyLength":2}}}`,
	`{"jsonrpc":"2.0","id":"x","method":"SendMessage","params":{"tenant":"t","message":{"role":"ROLE_USER","messageId":"m1","parts":[{"text":"hi"},{"data":{"a":1}},{"file":{"uri":"https://x/y","mimeType":"text/plain"}}]},"configuration":{"returnImmediately":true}}}`,
	`{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"id":"t1","historyLength":0}}`,
	`{"jsonrpc":"2.0","id":3,"method":"GetTask","params":{"name":"tasks/t1"}}`,
	`{"kind":"task","id":"t1","contextId":"c1","status":{"state":"input-required","message":{"kind":"message","role":"agent","parts":[{"kind":"text","text":"?"}]}},"artifacts":[{"artifactId":"a","parts":[{"kind":"text","text":"x"}]}]}`,
	`{"task":{"id":"t1","status":{"state":"TASK_STATE_COMPLETED"}}}`,
	`{"kind":"status-update","taskId":"t1","status":{"state":"working"},"final":false}`,
	`{"statusUpdate":{"taskId":"t1","status":{"state":"TASK_STATE_WORKING"}}}`,
	`{"kind":"artifact-update","taskId":"t1","artifact":{"artifactId":"a","parts":[{"kind":"text","text":"x"}]},"append":true}`,
	`{"message":{"role":"ROLE_AGENT","parts":[{"text":"hi"}]}}`,
	`{"kind":"message","parts":[{"kind":"file","file":{"bytes":"AAE=","name":"f"}}]}`,
	`null`, `[]`, `{}`, `{"params":`, `{"message":null}`, `{"kind":"task"}`,
}

// FuzzDecodeWire feeds any bytes to every decoder of A2A input (the
// params of requests a server receives, the results and stream events a
// client receives): no panic, and what encoding/json refuses as JSON is
// refused.
func FuzzDecodeWire(f *testing.F) {
	for _, s := range a2aSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		valid := json.Valid(raw)
		var req Request
		if err := json.Unmarshal(raw, &req); err == nil {
			if _, _, ok := ParseMethod(req.Method); ok {
				_, _ = DecodeSendParams(req.Params)
				_, _ = DecodeTaskQuery(req.Params)
			}
		}
		if _, err := DecodeSendParams(raw); err == nil && !valid {
			t.Fatalf("DecodeSendParams accepted invalid JSON %q", raw)
		}
		if _, err := DecodeTaskQuery(raw); err == nil && !valid {
			t.Fatalf("DecodeTaskQuery accepted invalid JSON %q", raw)
		}
		e, err := DecodeEvent(raw)
		if err == nil && !valid {
			t.Fatalf("DecodeEvent accepted invalid JSON %q", raw)
		}
		if err == nil {
			// What was decoded encodes in both versions.
			for _, v := range []Version{V03, V1} {
				if _, err := json.Marshal(EncodeEvent(e, v)); err != nil {
					t.Fatalf("EncodeEvent(%v) of a decoded event: %v", v, err)
				}
			}
		}
		if _, err := DecodeTask(raw); err == nil && !valid {
			t.Fatalf("DecodeTask accepted invalid JSON %q", raw)
		}
	})
}

// FuzzSSEData reads any body as a remote agent's event stream: no panic,
// the same events whatever the read sizes, and every event of a body made
// of "data:" lines comes back.
func FuzzSSEData(f *testing.F) {
	for _, s := range []string{"data: {\"a\":1}\n\n", "data: a\ndata: b\n\n: keepalive\n\ndata: c", "event: x\ndata:y\r\n\r\n", ":\n\n\n", "data"} {
		f.Add([]byte(s))
	}
	collect := func(r interface{ Read([]byte) (int, error) }) ([]string, error) {
		var out []string
		for d, err := range sseData(r) {
			if err != nil {
				return out, err
			}
			out = append(out, string(d))
		}
		return out, nil
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		whole, err1 := collect(bytes.NewReader(body))
		bytewise, err2 := collect(iotest.OneByteReader(bytes.NewReader(body)))
		if (err1 == nil) != (err2 == nil) || len(whole) != len(bytewise) {
			t.Fatalf("read whole: %q %v; byte by byte: %q %v", whole, err1, bytewise, err2)
		}
		for i := range whole {
			if whole[i] != bytewise[i] {
				t.Fatalf("event %d: %q whole, %q byte by byte", i, whole[i], bytewise[i])
			}
		}
	})
}
