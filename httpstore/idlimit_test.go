package httpstore_test

import (
	"encoding/json"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/httpstore"
	"github.com/ckptstore/ckptstore/internal/redistest"
)

// TestIDLimitOverHTTP: the checkpoint routes take ids of up to
// driver.MaxIDBytes and refuse longer ones with INVALID_ID, on memstore
// and on redisstore, whatever the client: the server checks, and its
// error quotes only a prefix of the id. Nothing refused is stored, so the
// thread listing stays small.
func TestIDLimitOverHTTP(t *testing.T) {
	redisSrv := redistest.Start(t)
	backends := map[string]httpstore.Backend{
		"memstore":   memBackend{},
		"redisstore": redisBackend{redisSrv.Client(t, nil)},
	}
	for name, backend := range backends {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(httpstore.NewHandler(backend, httpstore.HandlerOptions{Dev: true}))
			t.Cleanup(srv.Close)
			base := srv.URL
			q := func(s string) string { b, _ := json.Marshal(s); return string(b) }

			// At the limit: a thread and a checkpoint of MaxIDBytes work.
			at := strings.Repeat("é", driver.MaxIDBytes/2)
			st, code, b := post(t, base, "acquireWriter", `{"threadId":`+q(at)+`}`)
			require.Equal(t, 200, st, "%s %s", code, b)
			var lease struct {
				ThreadID   string `json:"threadId"`
				OwnerToken string `json:"ownerToken"`
				Fence      int64  `json:"fence"`
			}
			require.NoError(t, json.Unmarshal(b, &lease))
			writer, err := json.Marshal(lease)
			require.NoError(t, err)
			cp := `{"id":` + q(at) + `,"threadId":` + q(at) + `,"createdAt":1,"reason":"automatic","files":[],"artifacts":[],"conversation":[]}`
			st, code, b = post(t, base, "append", `{"checkpoint":`+cp+`,"expectedHeadId":null,"writer":`+string(writer)+`}`, "Idempotency-Key", "k1")
			require.Equal(t, 200, st, "%s %s", code, b)
			st, code, b = post(t, base, "get", `{"id":`+q(at)+`}`)
			require.Equal(t, 200, st, "%s %s", code, b)
			require.Contains(t, string(b), q(at))
			st, code, b = post(t, base, "saveThread", `{"threadId":`+q(at)+`,"messages":[]}`, "Idempotency-Key", "k2")
			require.Equal(t, 200, st, "%s %s", code, b)

			// Over it: every route that takes an id refuses it.
			for _, n := range []int{driver.MaxIDBytes + 1, 4 << 20} {
				long := q(strings.Repeat("x", n))
				for _, c := range []struct{ method, body string }{
					{"get", `{"id":` + long + `}`},
					{"list", `{"threadId":` + long + `}`},
					{"getHead", `{"threadId":` + long + `}`},
					{"listPage", `{"threadId":` + long + `}`},
					{"loadThread", `{"threadId":` + long + `}`},
					{"acquireWriter", `{"threadId":` + long + `}`},
					{"saveThread", `{"threadId":` + long + `,"messages":[]}`},
					{"instanceGet", `{"key":` + long + `}`},
					{"instanceUpsert", `{"record":{"key":` + long + `,"provider":"p","providerSandboxId":"s","threadId":"t","updatedAt":1}}`},
				} {
					st, code, b := post(t, base, c.method, c.body, "Idempotency-Key", "k-"+c.method+strconv.Itoa(n))
					require.Equal(t, 400, st, "%s with a %d-byte id: %s", c.method, n, b)
					require.Equal(t, "SANDBOX_SNAPSHOT_INVALID_ID", code, "%s with a %d-byte id", c.method, n)
					require.Less(t, len(b), 400, "%s: the error must quote only a prefix of the id", c.method)
				}
			}
			st, _, b = post(t, base, "threads", `{}`)
			require.Equal(t, 200, st)
			var page struct{ Threads []string }
			require.NoError(t, json.Unmarshal(b, &page))
			require.Equal(t, []string{at}, page.Threads, "only the thread at the limit is stored")
		})
	}
}
