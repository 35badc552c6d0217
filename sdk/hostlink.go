package sdk

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/agenthost/agenthost/sdk/toolv1"
)

// hostStreamWait bounds the wait for the Host stream of a call that says
// the host answers on it.
const hostStreamWait = time.Second

// hostLink is the plugin's end of the Host stream: the host opens it on
// the plugin's connection and keeps it open, and the plugin's questions
// travel down it, each answered by a message of the same id.
type hostLink struct {
	ready chan struct{} // closed once the host opened the stream
	once  sync.Once

	mu      sync.Mutex
	stream  toolv1.ToolPlugin_HostServer
	err     error // why the stream ended, once it has
	nextID  uint64
	pending map[uint64]chan *toolv1.HostAnswer
}

// Host serves the Host stream: the host's answers arrive here until the
// stream ends, which ends the questions still waiting.
func (s *server) Host(stream toolv1.ToolPlugin_HostServer) error {
	l := &s.host
	l.mu.Lock()
	if l.stream != nil {
		l.mu.Unlock()
		return status.Error(codes.AlreadyExists, "the Host stream is open already")
	}
	l.stream, l.pending = stream, map[uint64]chan *toolv1.HostAnswer{}
	l.mu.Unlock()
	l.once.Do(func() { close(l.ready) })
	for {
		a, err := stream.Recv()
		if err != nil {
			l.end(err)
			return nil
		}
		l.mu.Lock()
		ch := l.pending[a.GetId()]
		delete(l.pending, a.GetId())
		l.mu.Unlock()
		if ch != nil {
			ch <- a
		}
	}
}

// end fails the questions waiting for an answer, and those to come.
func (l *hostLink) end(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.err = fmt.Errorf("the host's end of the connection is closed: %w", err)
	for id, ch := range l.pending {
		close(ch)
		delete(l.pending, id)
	}
}

// ask sends q and waits for its answer, within ctx.
func (l *hostLink) ask(ctx context.Context, q *toolv1.HostQuestion) (*toolv1.HostAnswer, error) {
	// The host opens the stream before it sends a call that may ask, but
	// the two are served apart: the call may get here first, by a hair.
	// A host that says it answers and has opened no stream for that long
	// does not.
	wait := time.NewTimer(hostStreamWait)
	defer wait.Stop()
	select {
	case <-l.ready:
	case <-wait.C:
		return nil, ErrNoHostState
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	ch := make(chan *toolv1.HostAnswer, 1)
	l.mu.Lock()
	if l.err != nil {
		l.mu.Unlock()
		return nil, l.err
	}
	l.nextID++
	q.Id = l.nextID
	l.pending[q.Id] = ch
	// Sends on a stream must not overlap: they are made under mu.
	err := l.stream.Send(q)
	if err != nil {
		delete(l.pending, q.Id)
	}
	l.mu.Unlock()
	if err != nil {
		return nil, err
	}
	select {
	case a, ok := <-ch:
		if !ok {
			l.mu.Lock()
			defer l.mu.Unlock()
			return nil, l.err
		}
		return a, nil
	case <-ctx.Done():
		l.mu.Lock()
		delete(l.pending, q.Id)
		l.mu.Unlock()
		return nil, ctx.Err()
	}
}

// stateFunc asks the host, on the Host stream, for the state of call
// callID.
func (l *hostLink) stateFunc(callID uint64) StateFunc {
	return func(ctx context.Context) (State, error) {
		a, err := l.ask(ctx, &toolv1.HostQuestion{Question: &toolv1.HostQuestion_GetState{GetState: &toolv1.GetStateRequest{CallId: callID}}})
		if errors.Is(err, ErrNoHostState) {
			return State{}, err
		}
		if err != nil {
			return State{}, fmt.Errorf("asking the host for its state: %w", err)
		}
		if e := a.GetError(); e != nil {
			if codes.Code(e.GetCode()) == codes.FailedPrecondition {
				return State{}, ErrNoHostState
			}
			return State{}, fmt.Errorf("asking the host for its state: %w", errors.New(e.GetMessage()))
		}
		st := a.GetState()
		return State{
			SystemPrompt:           st.GetSystemPrompt(),
			SessionContext:         st.GetSessionContext(),
			SessionContextFilePath: st.GetSessionContextFilePath(),
		}, nil
	}
}
