package redistest

import (
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"testing"
)

// Proxy forwards TCP connections from its own 127.0.0.1 address to a
// server and loses some of them on purpose:
//
//   - a lost reply: the server's reply arrives and the proxy closes both
//     sides without forwarding it, so the command ran but the client never
//     learns the outcome (it sees EOF, and go-redis resends the command);
//   - a lost request: the proxy forwards part of a request and closes both
//     sides, so the server never runs it.
//
// Which chunks are lost is drawn from a seeded generator (SetFaults) or
// forced for the next replies (DropReplies). The proxy is closed when the
// test ends.
type Proxy struct {
	// Addr is the address clients dial.
	Addr string

	target string
	ln     net.Listener

	mu          sync.Mutex
	rng         *rand.Rand
	replyRate   float64
	requestRate float64
	dropNext    int
	conns       map[net.Conn]struct{}
	closed      bool

	droppedReplies  atomic.Int64
	droppedRequests atomic.Int64
	wg              sync.WaitGroup
}

// NewProxy starts a proxy to target (host:port).
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("redistest: proxy listen: %v", err)
	}
	p := &Proxy{Addr: ln.Addr().String(), target: target, ln: ln,
		rng: rand.New(rand.NewPCG(1, 2)), conns: make(map[net.Conn]struct{})}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.Close)
	return p
}

// SetFaults makes the proxy lose each reply chunk with probability
// replyRate and each request chunk with probability requestRate, drawn
// from a generator seeded with seed.
func (p *Proxy) SetFaults(seed uint64, replyRate, requestRate float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rng = rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	p.replyRate, p.requestRate = replyRate, requestRate
}

// DropReplies makes the proxy lose the next n reply chunks, whatever the
// fault rates.
func (p *Proxy) DropReplies(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dropNext = n
}

// DroppedReplies returns how many replies the proxy has lost so far.
func (p *Proxy) DroppedReplies() int64 { return p.droppedReplies.Load() }

// DroppedRequests returns how many requests the proxy has cut so far.
func (p *Proxy) DroppedRequests() int64 { return p.droppedRequests.Load() }

// Close stops accepting, closes every connection and waits for the
// forwarding goroutines.
func (p *Proxy) Close() {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	_ = p.ln.Close()
	p.wg.Wait()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = client.Close()
			continue
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			_ = client.Close()
			_ = server.Close()
			return
		}
		p.conns[client], p.conns[server] = struct{}{}, struct{}{}
		p.mu.Unlock()
		var once sync.Once
		closeBoth := func() {
			once.Do(func() {
				p.mu.Lock()
				delete(p.conns, client)
				delete(p.conns, server)
				p.mu.Unlock()
				_ = client.Close()
				_ = server.Close()
			})
		}
		p.wg.Add(2)
		go p.pipe(server, client, closeBoth, p.dropRequest, true)
		go p.pipe(client, server, closeBoth, p.dropReply, false)
	}
}

// dropReply decides whether to lose a reply chunk.
func (p *Proxy) dropReply() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dropNext > 0 {
		p.dropNext--
		p.droppedReplies.Add(1)
		return true
	}
	if p.replyRate > 0 && p.rng.Float64() < p.replyRate {
		p.droppedReplies.Add(1)
		return true
	}
	return false
}

// dropRequest decides whether to cut a request chunk.
func (p *Proxy) dropRequest() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.requestRate > 0 && p.rng.Float64() < p.requestRate {
		p.droppedRequests.Add(1)
		return true
	}
	return false
}

// pipe copies src to dst chunk by chunk. When drop says so it closes both
// sides instead; a cut request first forwards half of its chunk, so the
// server reads an incomplete command and never runs it.
func (p *Proxy) pipe(dst, src net.Conn, closeBoth func(), drop func() bool, request bool) {
	defer p.wg.Done()
	defer closeBoth()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if drop() {
				if request && n > 1 {
					_, _ = dst.Write(buf[:n/2])
				}
				return
			}
			if _, err := dst.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			return // EOF or a closed connection: closeBoth ends the other side
		}
	}
}
