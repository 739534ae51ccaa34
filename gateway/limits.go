package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore/a2a"
	"github.com/agentgate/agentgate/limits"
)

// admitTurn counts a turn of user on a against the user's limits (the global
// ones and the model's): its slot, or the refusal (counted in /metrics).
func (s *Server) admitTurn(ctx context.Context, a *app, user string) (limits.Slot, error) {
	r := limits.Request{User: user, Model: a.ID, Global: s.cfg.Limits, PerModel: a.Limits}
	if r.IsZero() {
		return limits.NoSlot, nil
	}
	slot, err := s.cfg.Limiter.Admit(ctx, r)
	var ex *limits.ExceededError
	if errors.As(err, &ex) && s.cfg.Metrics != nil {
		s.cfg.Metrics.LimitRefused(ex.Limit, a.ID)
	}
	return slot, err
}

// tokensOf is what a turn's usage counts against tokens_per_day: the
// total, else the prompt, output and thoughts the provider reported.
func tokensOf(u *genai.GenerateContentResponseUsageMetadata) int64 {
	if u == nil {
		return 0
	}
	if u.TotalTokenCount > 0 {
		return int64(u.TotalTokenCount)
	}
	return int64(u.PromptTokenCount) + int64(u.CandidatesTokenCount) + int64(u.ThoughtsTokenCount)
}

// limitError is what a client is told of a refusal by its limits.
func limitError(ex *limits.ExceededError) *apiError {
	scope := "your requests to all models"
	if ex.PerModel {
		scope = "your requests to this model"
	}
	after := retrySeconds(ex.RetryAfter)
	return &apiError{status: http.StatusTooManyRequests, kind: "rate_limit_error", code: "rate_limit_exceeded", param: ex.Limit,
		retryAfter: ex.RetryAfter, message: "Limit " + ex.Limit + " reached for " + scope + "; retry after " + strconv.Itoa(after) + " seconds."}
}

// retrySeconds is a Retry-After: whole seconds, rounded up, at least 1.
func retrySeconds(d time.Duration) int {
	return max(1, int((d+time.Second-1)/time.Second))
}

// rpcRateLimited is the JSON-RPC error code of a refusal by the limits (in
// the range JSON-RPC leaves to servers; A2A defines none).
const rpcRateLimited = -32029

// rpcFailLimited answers an A2A request refused by the limits: 429 with
// Retry-After, the body a JSON-RPC error. It reports false for any other
// error.
func rpcFailLimited(c *gin.Context, id json.RawMessage, err error) bool {
	var ex *limits.ExceededError
	if !errors.As(err, &ex) {
		return false
	}
	e := limitError(ex)
	c.Header("Retry-After", strconv.Itoa(retrySeconds(e.retryAfter)))
	c.JSON(e.status, a2a.Response{JSONRPC: "2.0", ID: id, Error: &a2a.RPCError{Code: rpcRateLimited, Message: e.message,
		Data: map[string]any{"status": e.status, "code": e.code, "param": e.param, "retry_after": retrySeconds(e.retryAfter)}}})
	return true
}
