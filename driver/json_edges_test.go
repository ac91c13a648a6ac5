package driver_test

// Edges of the checkpoint JSON codec: surrogate pairs in ids and
// conversations longer than the rest of the checkpoint.

import (
	"strings"
	"testing"

	"github.com/ckptstore/ckptstore/driver"
)

// Surrogates in JSON ids (wellFormedString and hex4 in json.go): the
// edges of the low-surrogate range as the second half of a pair, a high
// surrogate followed by text that ends in low-surrogate hex digits without
// an escape, and lone surrogates spelled with uppercase hex digits.
func TestUnmarshalSurrogateEdges(t *testing.T) {
	for _, tt := range []struct {
		name   string
		id     string // the JSON string literal of the id, quotes included
		wantID string
		want   error
	}{
		{"pair with the lowest low half", `"\ud800\udc00"`, "\U00010000", nil},
		{"pair with the highest low half", `"\ud800\udfff"`, "\U000103FF", nil},
		{"high then U+E000, just past the low range", `"\ud800\ue000"`, "", driver.ErrInvalidID},
		{"high then U+DBFF, a high", `"\ud800\udbff"`, "", driver.ErrInvalidID},
		{"high then unescaped text ending in dc00", `"\ud800xxdc00"`, "", driver.ErrInvalidID},
		{"high then unescaped u and low hex", `"\ud800xudc00"`, "", driver.ErrInvalidID},
		{"uppercase lone low surrogate", `"\uDC00"`, "", driver.ErrInvalidID},
		{"uppercase lone high surrogate", `"\uDBFF"`, "", driver.ErrInvalidID},
		{"uppercase high then lowercase low", `"\uD83D\ude00"`, "😀", nil},
		{"uppercase non-surrogate", `"\uABCD\uEF01"`, "\uABCD\uEF01", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var cp driver.Checkpoint
			err := cp.UnmarshalJSON([]byte(`{"id":` + tt.id + `,"threadId":"t","createdAt":1,"reason":"named"}`))
			wantErr(t, err, tt.want, "")
			if tt.want == nil && cp.ID != tt.wantID {
				t.Fatalf("id = %+q, want %+q", cp.ID, tt.wantID)
			}
		})
	}
}

// Checkpoint.MarshalJSON of a conversation longer than the rest of the
// checkpoint's JSON (an output buffer sized len(out)-len(conv) would
// panic).
func TestMarshalConversationLongerThanTheRest(t *testing.T) {
	conv := "[" + strings.Repeat(`{"role":"user","content":"a long message"},`, 200) + `{"role":"assistant","content":"ok"}]`
	cp := &driver.Checkpoint{ID: "c", ThreadID: "t", CreatedAt: 1, Reason: driver.ReasonAutomatic, Conversation: []byte(conv)}
	b, err := cp.MarshalJSON()
	if err != nil {
		t.Fatalf("MarshalJSON: %v", err)
	}
	var got driver.Checkpoint
	if err := got.UnmarshalJSON(b); err != nil {
		t.Fatalf("UnmarshalJSON: %v", err)
	}
	if string(got.Conversation) != conv {
		t.Fatalf("conversation of %d bytes came back as %d bytes", len(conv), len(got.Conversation))
	}
}
