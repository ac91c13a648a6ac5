package streams

// The pure checks: each parses or validates one input, without state, and
// fails with ErrBadRequest (ErrTooLarge for size) before anything is
// written.

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// MaxNameBytes is the longest stream name.
const MaxNameBytes = 1024

// MaxSafeInteger is the largest producer epoch or sequence (2^53−1).
const MaxSafeInteger = 1<<53 - 1

// CheckName checks a stream name: 1 to MaxNameBytes bytes of valid UTF-8,
// and not in the protocol's reserved "__ds" space.
func CheckName(name string) error {
	if name == "" || len(name) > MaxNameBytes || !utf8.ValidString(name) {
		return errorf(ErrBadRequest, "stream name %s: want 1 to %d bytes of valid UTF-8", quoteShort(name), MaxNameBytes)
	}
	if name == "__ds" || strings.HasPrefix(name, "__ds/") {
		return errorf(ErrNotFound, "stream name %s: the __ds space is reserved for the protocol's subscriptions, which this server does not serve", quoteShort(name))
	}
	return nil
}

// parseUint parses a non-negative decimal integer ≤ MaxSafeInteger with no
// sign, no leading zero, no fraction or exponent.
func parseUint(s string) (int64, bool) {
	if s == "" || len(s) > 16 || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n > MaxSafeInteger {
		return 0, false
	}
	return n, true
}

// ParseConfig reads Stream-TTL and Stream-Expires-At ("" when absent)
// into c: both at once, a TTL that is not a plain non-negative integer,
// or an expiry that is not RFC 3339 are ErrBadRequest.
func ParseConfig(c *Config, ttl, expiresAt string) error {
	if ttl != "" && expiresAt != "" {
		return errorf(ErrBadRequest, "Stream-TTL and Stream-Expires-At together: send one")
	}
	if ttl != "" {
		n, ok := parseUint(ttl)
		if !ok {
			return errorf(ErrBadRequest, "Stream-TTL %s: want a non-negative integer of seconds, without sign or leading zero", quoteShort(ttl))
		}
		c.TTL, c.HasTTL = n, true
	}
	if expiresAt != "" {
		t, err := time.Parse(time.RFC3339Nano, expiresAt)
		if err != nil {
			return errorf(ErrBadRequest, "Stream-Expires-At %s: want an RFC 3339 time", quoteShort(expiresAt))
		}
		c.ExpiresAt = t
	}
	return nil
}

// ParseProducer reads the three producer headers: none (nil), or all
// three valid; any other mix is ErrBadRequest.
func ParseProducer(id, epoch, seq string, hasID, hasEpoch, hasSeq bool) (*Producer, error) {
	if !hasID && !hasEpoch && !hasSeq {
		return nil, nil
	}
	if !hasID || !hasEpoch || !hasSeq {
		return nil, errorf(ErrBadRequest, "Producer-Id, Producer-Epoch and Producer-Seq go together")
	}
	if id == "" || len(id) > MaxNameBytes || !utf8.ValidString(id) {
		return nil, errorf(ErrBadRequest, "Producer-Id %s: want 1 to %d bytes of valid UTF-8", quoteShort(id), MaxNameBytes)
	}
	e, ok := parseUint(epoch)
	if !ok {
		return nil, errorf(ErrBadRequest, "Producer-Epoch %s: want an integer from 0 to 2^53-1", quoteShort(epoch))
	}
	s, ok := parseUint(seq)
	if !ok {
		return nil, errorf(ErrBadRequest, "Producer-Seq %s: want an integer from 0 to 2^53-1", quoteShort(seq))
	}
	return &Producer{ID: id, Epoch: e, Seq: s}, nil
}

// ParseSubOffset reads Stream-Fork-Sub-Offset ("" when absent: 0).
func ParseSubOffset(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	n, ok := parseUint(s)
	if !ok {
		return 0, errorf(ErrBadRequest, "Stream-Fork-Sub-Offset %s: want a non-negative integer", quoteShort(s))
	}
	return n, nil
}

// CheckBody turns a request body into a chunk of a stream of content
// type ct. In JSON mode the body must be one JSON value; an array is
// flattened one level into its elements, and each message is stored
// compacted, so that no message holds a line break. An empty array is
// no data (nil) when create is set, else ErrBadRequest; so is an empty
// body. Bytes are taken as they are.
func CheckBody(body []byte, ct string, create bool) (*Chunk, error) {
	if len(body) == 0 {
		return nil, nil
	}
	if MediaType(ct) != "application/json" {
		return &Chunk{Data: body}, nil
	}
	trimmed := bytes.TrimSpace(body)
	if !json.Valid(trimmed) {
		return nil, errorf(ErrBadRequest, "the body is not valid JSON")
	}
	c := &Chunk{Ends: []int32{}}
	var buf bytes.Buffer
	add := func(m []byte) error {
		buf.Reset()
		if err := json.Compact(&buf, m); err != nil {
			return errorf(ErrBadRequest, "the body is not valid JSON")
		}
		if len(c.Ends) > 0 {
			c.Data = append(c.Data, ',')
		}
		c.Data = append(c.Data, buf.Bytes()...)
		if len(c.Data) > 1<<31-1 {
			return errorf(ErrTooLarge, "the body is too large")
		}
		c.Ends = append(c.Ends, int32(len(c.Data)))
		return nil
	}
	if trimmed[0] != '[' {
		if err := add(trimmed); err != nil {
			return nil, err
		}
		return c, nil
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(trimmed, &elems); err != nil {
		return nil, errorf(ErrBadRequest, "the body is not valid JSON")
	}
	if len(elems) == 0 {
		if create {
			return nil, nil
		}
		return nil, errorf(ErrBadRequest, "an empty JSON array appends nothing")
	}
	for _, m := range elems {
		if err := add(m); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// AppendJSONArray appends the messages of chunks to b as one JSON array.
func AppendJSONArray(b []byte, chunks []Chunk) []byte {
	b = append(b, '[')
	first := true
	for i := range chunks {
		if len(chunks[i].Ends) == 0 {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, chunks[i].Data...)
	}
	return append(b, ']')
}
