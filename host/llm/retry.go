package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// RetryPolicy bounds the retries of a request that failed with 429, 5xx
// or a transport error. The zero value means the defaults: 4 attempts, a
// 500 ms base delay doubling to at most 30 s, with jitter; a Retry-After
// from the API wins when it is within MaxDelay.
type RetryPolicy struct {
	MaxAttempts int
	BaseDelay   time.Duration
	MaxDelay    time.Duration
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.MaxAttempts <= 0 {
		p.MaxAttempts = 4
	}
	if p.BaseDelay <= 0 {
		p.BaseDelay = 500 * time.Millisecond
	}
	if p.MaxDelay <= 0 {
		p.MaxDelay = 30 * time.Second
	}
	return p
}

// send performs the request that build makes, again after a retryable
// failure, and returns the first 2xx response. A non-2xx answer becomes
// the error that parseError makes of it (status and body).
func send(ctx context.Context, client *http.Client, policy RetryPolicy, provider string,
	build func(ctx context.Context) (*http.Request, error),
	parseError func(status int, body []byte) *APIError,
) (*http.Response, error) {
	policy = policy.withDefaults()
	var lastErr error
	for attempt := 1; ; attempt++ {
		req, err := build(ctx)
		if err != nil {
			return nil, err
		}
		resp, err := client.Do(req)
		var wait time.Duration
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			// The transport's error may quote the URL, never a header: no
			// key can be in it.
			lastErr = fmt.Errorf("%s: %w", provider, err)
		case resp.StatusCode >= 200 && resp.StatusCode < 300:
			return resp, nil
		default:
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
			resp.Body.Close()
			apiErr := parseError(resp.StatusCode, body)
			apiErr.RetryAfter = retryAfter(resp.Header)
			if !apiErr.Retryable() {
				return nil, apiErr
			}
			lastErr, wait = apiErr, apiErr.RetryAfter
		}
		if attempt >= policy.MaxAttempts {
			return nil, lastErr
		}
		if wait <= 0 || wait > policy.MaxDelay {
			wait = backoff(policy, attempt)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
	}
}

// backoff is the delay before attempt+1: exponential, with full jitter
// over its upper half.
func backoff(p RetryPolicy, attempt int) time.Duration {
	d := p.BaseDelay << (attempt - 1)
	if d > p.MaxDelay || d <= 0 {
		d = p.MaxDelay
	}
	return d/2 + rand.N(d/2+1)
}

// retryAfter reads Retry-After (seconds or an HTTP date) and the
// retry-after-ms some APIs send.
func retryAfter(h http.Header) time.Duration {
	if ms := h.Get("Retry-After-Ms"); ms != "" {
		if v, err := strconv.ParseFloat(ms, 64); err == nil && v >= 0 {
			return time.Duration(v * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil && secs >= 0 {
		return time.Duration(secs * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}

// ErrNoKey is returned when a provider that needs an API key has none.
var ErrNoKey = errors.New("no API key")
