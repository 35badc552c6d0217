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

// retrier counts the attempts of one request against its policy. The
// HTTP retries of send and the retries of a stream that failed before it
// delivered anything draw from the same attempts.
type retrier struct {
	policy  RetryPolicy
	attempt int // attempts made so far
}

func newRetrier(p RetryPolicy) *retrier { return &retrier{policy: p.withDefaults()} }

// again waits before another attempt and reports whether one may be made:
// false when the attempts are spent. wait is what the API asked for, if
// anything; it is used when within MaxDelay, else the backoff is. It
// returns ctx's error if ctx ends while waiting.
func (r *retrier) again(ctx context.Context, wait time.Duration) (bool, error) {
	if r.attempt >= r.policy.MaxAttempts {
		return false, nil
	}
	if wait <= 0 || wait > r.policy.MaxDelay {
		wait = backoff(r.policy, r.attempt)
	}
	select {
	case <-ctx.Done():
		return false, ctx.Err()
	case <-time.After(wait):
		return true, nil
	}
}

// send performs the request that build makes, again after a retryable
// failure, and returns the first 2xx response. A non-2xx answer becomes
// the error that parseError makes of it (status and body).
func send(ctx context.Context, client *http.Client, r *retrier, provider string,
	build func(ctx context.Context) (*http.Request, error),
	parseError func(status int, body []byte) *APIError,
) (*http.Response, error) {
	for {
		req, err := build(ctx)
		if err != nil {
			return nil, err
		}
		r.attempt++
		resp, err := client.Do(req)
		var (
			lastErr error
			wait    time.Duration
		)
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
		ok, err := r.again(ctx, wait)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, lastErr
		}
	}
}

// streamWithRetry runs a streamed answer. attempt sends the request
// (through send, with r) and reads the stream, passing each piece to
// deliver; on failure it returns what it had assembled so far, if
// anything, with the error.
//
// A retryable error the API sent inside the stream (an *APIError with
// InStream) is retried like its HTTP twin as long as nothing has been
// delivered to onDelta yet. Once something has, no failure is retried:
// it is returned as an *InterruptedError holding the part delivered. An
// error of onDelta itself is returned as it is.
func streamWithRetry(ctx context.Context, r *retrier, onDelta func(Delta) error,
	attempt func(ctx context.Context, deliver func(Delta) error) (*Response, error),
) (*Response, error) {
	for {
		delivered := false
		var callbackErr error
		deliver := func(d Delta) error {
			if d.Text == "" && d.Thinking == "" {
				return nil
			}
			delivered = true
			if onDelta == nil {
				return nil
			}
			if err := onDelta(d); err != nil {
				callbackErr = err
				return err
			}
			return nil
		}
		resp, err := attempt(ctx, deliver)
		if err == nil {
			return resp, nil
		}
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, ctxErr
		}
		if callbackErr != nil {
			return nil, callbackErr
		}
		if delivered {
			if resp != nil {
				resp.Message.ToolCalls = nil
			}
			return nil, &InterruptedError{Partial: resp, Err: err}
		}
		var apiErr *APIError
		if errors.As(err, &apiErr) && apiErr.InStream && apiErr.Retryable() {
			ok, werr := r.again(ctx, apiErr.RetryAfter)
			if werr != nil {
				return nil, werr
			}
			if ok {
				continue
			}
		}
		return nil, err
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
