package gateway

import "testing"

// Every sink answers with its own type's traits: the optional interfaces
// it has, as driveRun once asserted them one by one on every turn.
func TestSinkTraits(t *testing.T) {
	for _, c := range []struct {
		name string
		sink turnSink
		own  sinkTraits
		want sinkTraits
	}{
		{"chatAnswer", (*chatAnswer)(nil), traitsOf[*chatAnswer](), traitWhole | traitEnding | traitPersist},
		{"chatStream", (*chatStream)(nil), traitsOf[*chatStream](), traitStream | traitPersist},
		{"responsesAnswer", (*responsesAnswer)(nil), traitsOf[*responsesAnswer](), traitWhole | traitPersist},
		{"responsesStream", (*responsesStream)(nil), traitsOf[*responsesStream](), traitStream | traitPersist},
		{"responsesBackground", (*responsesBackground)(nil), traitsOf[*responsesBackground](), traitLogsFrames | traitPersist},
		{"nativeAnswer", (*nativeAnswer)(nil), traitsOf[*nativeAnswer](), traitLogsFrames | traitWhole},
		{"nativeStream", (*nativeStream)(nil), traitsOf[*nativeStream](), traitLogsFrames | traitStream},
		{"a2aSink", (*a2aSink)(nil), traitsOf[*a2aSink](), 0},
		{"a2aAnswer", (*a2aAnswer)(nil), traitsOf[*a2aAnswer](), 0},
		{"a2aStream", (*a2aStream)(nil), traitsOf[*a2aStream](), traitStream},
	} {
		if got := c.sink.traits(); got != c.own || got != c.want {
			t.Errorf("%s.traits() = %05b, want %05b (its type's: %05b)", c.name, got, c.want, c.own)
		}
	}
}
