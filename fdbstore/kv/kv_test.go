package kv

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

func TestStrinc(t *testing.T) {
	for _, c := range []struct{ in, want []byte }{
		{[]byte("a"), []byte("b")},
		{[]byte("ab"), []byte("ac")},
		{[]byte{'a', 0xff}, []byte("b")},
		{[]byte{'a', 0xfe, 0xff, 0xff}, []byte{'a', 0xff}},
		{[]byte{0x00}, []byte{0x01}},
	} {
		in := append([]byte(nil), c.in...)
		if got := Strinc(c.in); !bytes.Equal(got, c.want) {
			t.Errorf("Strinc(%x) = %x, want %x", c.in, got, c.want)
		}
		if !bytes.Equal(in, c.in) {
			t.Errorf("Strinc modified its argument %x", in)
		}
	}
	for _, bad := range [][]byte{nil, {}, {0xff}, {0xff, 0xff}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Strinc(%x) did not panic", bad)
				}
			}()
			Strinc(bad)
		}()
	}
}

func TestPrefixRange(t *testing.T) {
	p := []byte("thread/")
	r := PrefixRange(p)
	if !bytes.Equal(r.Begin, p) || !bytes.Equal(r.End, []byte("thread0")) {
		t.Fatalf("PrefixRange = [%q, %q)", r.Begin, r.End)
	}
	r.Begin[0] = 'X'
	if p[0] != 't' {
		t.Fatal("PrefixRange aliases its argument")
	}
}

func TestErrors(t *testing.T) {
	retryable := map[int]bool{
		CodeTransactionTooOld: true, CodeFutureVersion: true, CodeNotCommitted: true,
		CodeCommitUnknownResult: true, CodeProcessBehind: true,
		CodeTransactionCancelled: false, CodeTransactionTimedOut: false,
		CodeTransactionTooLarge: false, CodeKeyTooLarge: false, CodeValueTooLarge: false,
		CodeInvertedRange: false, CodeKeyOutsideLegalRange: false, CodeUsedDuringCommit: false,
	}
	for code, want := range retryable {
		err := fmt.Errorf("context: %w", NewError(code))
		if got := ErrorCode(err); got != code {
			t.Errorf("ErrorCode(wrapped %d) = %d", code, got)
		}
		if got := IsRetryable(err); got != want {
			t.Errorf("IsRetryable(%d) = %v, want %v", code, got, want)
		}
		if got := MaybeCommitted(err); got != (code == CodeCommitUnknownResult) {
			t.Errorf("MaybeCommitted(%d) = %v", code, got)
		}
		if NewError(code).Message == "unknown error" {
			t.Errorf("code %d has no message", code)
		}
	}
	plain := errors.New("plain")
	if ErrorCode(plain) != 0 || IsRetryable(plain) || ErrorCode(nil) != 0 {
		t.Fatal("a plain error has an FDB code")
	}
	if got := NewError(1).Error(); got != "fdb error 1: unknown error" {
		t.Fatalf("NewError(1) = %q", got)
	}
}

func TestInt64Encoding(t *testing.T) {
	for _, v := range []int64{0, 1, -1, 1 << 40, -1 << 63, 1<<63 - 1} {
		if got := DecodeInt64(EncodeInt64(v)); got != v {
			t.Errorf("round trip %d = %d", v, got)
		}
	}
	if got := DecodeInt64(nil); got != 0 {
		t.Errorf("DecodeInt64(nil) = %d", got)
	}
	if got := DecodeInt64([]byte{0x01, 0x01}); got != 257 {
		t.Errorf("short value decodes to %d, want 257 (zero-extended)", got)
	}
	if got := EncodeInt64(258); !bytes.Equal(got, []byte{2, 1, 0, 0, 0, 0, 0, 0}) {
		t.Errorf("EncodeInt64(258) = %x, want little-endian", got)
	}
}
