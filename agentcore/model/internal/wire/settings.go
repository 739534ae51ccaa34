package wire

import (
	"net/http"
	"time"

	"github.com/agentgate/agentgate/agentcore/model"
)

// Settings fills a provider's unset attempt settings: a zero timeout is
// defTimeout; zero retries are defRetries and negative ones none; no client
// is one on model.NewTransport.
func Settings(client *http.Client, timeout, defTimeout time.Duration, retries, defRetries int) (*http.Client, time.Duration, int) {
	if timeout == 0 {
		timeout = defTimeout
	}
	switch {
	case retries == 0:
		retries = defRetries
	case retries < 0:
		retries = 0
	}
	if client == nil {
		client = &http.Client{Transport: model.NewTransport()}
	}
	return client, timeout, retries
}
