package openai

import (
	"fmt"
	"strings"
	"testing"
)

// A Provider never prints its key, whatever the verb, also dereferenced.
func TestProviderPrintsNoKey(t *testing.T) {
	p, err := New(Config{Name: "o", APIKey: "sekrit-key-123", Headers: map[string]string{"api-key": "sekrit-key-123"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"%s", "%v", "%+v", "%#v"} {
		for _, v := range []any{p, *p} {
			if s := fmt.Sprintf(f, v); strings.Contains(s, "sekrit") {
				t.Errorf("%s of %T shows the key: %s", f, v, s)
			}
		}
	}
}
