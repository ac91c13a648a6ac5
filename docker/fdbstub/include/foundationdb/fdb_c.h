/*
 * A stand-in for FoundationDB's fdb_c.h, NOT the real header: just the
 * types and functions that the Go binding
 * (github.com/apple/foundationdb/bindings/go, API version 730) calls, with
 * signatures that match those calls. With stub.c it lets check-fdb-tag.sh
 * type-check, lint and link the fdb-tagged code on a machine without the
 * foundationdb-clients package. Real builds use the package's header
 * (/usr/include/foundationdb/fdb_c.h), as test.Dockerfile does.
 */
#ifndef FDB_C_STUB_H
#define FDB_C_STUB_H
#include <stdint.h>
typedef struct FDB_future FDBFuture;
typedef struct FDB_database FDBDatabase;
typedef struct FDB_tenant FDBTenant;
typedef struct FDB_transaction FDBTransaction;
typedef int fdb_error_t;
typedef int fdb_bool_t;
typedef int FDBNetworkOption;
typedef int FDBDatabaseOption;
typedef int FDBTransactionOption;
typedef int FDBStreamingMode;
typedef int FDBMutationType;
typedef int FDBConflictRangeType;
#pragma pack(push, 4)
typedef struct key { const uint8_t* key; int key_length; } FDBKey;
typedef struct keyvalue { const uint8_t* key; int key_length; const uint8_t* value; int value_length; } FDBKeyValue;
#pragma pack(pop)
typedef void (*FDBCallback)(FDBFuture* future, void* callback_parameter);
const char* fdb_get_error(fdb_error_t code);
fdb_error_t fdb_select_api_version_impl(int runtime_version, int header_version);
int fdb_get_max_api_version(void);
fdb_error_t fdb_network_set_option(FDBNetworkOption option, uint8_t const* value, int value_length);
fdb_error_t fdb_setup_network(void);
fdb_error_t fdb_run_network(void);
fdb_error_t fdb_stop_network(void);
void fdb_future_cancel(FDBFuture* f);
void fdb_future_release_memory(FDBFuture* f);
void fdb_future_destroy(FDBFuture* f);
fdb_bool_t fdb_future_is_ready(FDBFuture* f);
fdb_error_t fdb_future_set_callback(FDBFuture* f, FDBCallback callback, void* callback_parameter);
fdb_error_t fdb_future_get_error(FDBFuture* f);
fdb_error_t fdb_future_get_int64(FDBFuture* f, int64_t* out);
fdb_error_t fdb_future_get_key(FDBFuture* f, uint8_t const** out_key, int* out_key_length);
fdb_error_t fdb_future_get_value(FDBFuture* f, fdb_bool_t* out_present, uint8_t const** out_value, int* out_value_length);
fdb_error_t fdb_future_get_keyvalue_array(FDBFuture* f, FDBKeyValue const** out_kv, int* out_count, fdb_bool_t* out_more);
fdb_error_t fdb_future_get_key_array(FDBFuture* f, FDBKey const** out_key_array, int* out_count);
fdb_error_t fdb_future_get_string_array(FDBFuture* f, const char*** out_strings, int* out_count);
fdb_error_t fdb_create_database(const char* cluster_file_path, FDBDatabase** out_database);
fdb_error_t fdb_create_database_from_connection_string(const char* connection_string, FDBDatabase** out_database);
void fdb_database_destroy(FDBDatabase* d);
fdb_error_t fdb_database_set_option(FDBDatabase* d, FDBDatabaseOption option, uint8_t const* value, int value_length);
fdb_error_t fdb_database_open_tenant(FDBDatabase* d, uint8_t const* tenant_name, int tenant_name_length, FDBTenant** out_tenant);
fdb_error_t fdb_database_create_transaction(FDBDatabase* d, FDBTransaction** out_transaction);
FDBFuture* fdb_database_reboot_worker(FDBDatabase* db, uint8_t const* address, int address_length, fdb_bool_t check, int duration);
FDBFuture* fdb_database_get_client_status(FDBDatabase* db);
fdb_error_t fdb_tenant_create_transaction(FDBTenant* tenant, FDBTransaction** out_transaction);
void fdb_tenant_destroy(FDBTenant* tenant);
void fdb_transaction_destroy(FDBTransaction* tr);
void fdb_transaction_cancel(FDBTransaction* tr);
fdb_error_t fdb_transaction_set_option(FDBTransaction* tr, FDBTransactionOption option, uint8_t const* value, int value_length);
void fdb_transaction_set_read_version(FDBTransaction* tr, int64_t version);
FDBFuture* fdb_transaction_get_read_version(FDBTransaction* tr);
FDBFuture* fdb_transaction_get(FDBTransaction* tr, uint8_t const* key_name, int key_name_length, fdb_bool_t snapshot);
FDBFuture* fdb_transaction_get_key(FDBTransaction* tr, uint8_t const* key_name, int key_name_length, fdb_bool_t or_equal, int offset, fdb_bool_t snapshot);
FDBFuture* fdb_transaction_get_addresses_for_key(FDBTransaction* tr, uint8_t const* key_name, int key_name_length);
FDBFuture* fdb_transaction_get_range(FDBTransaction* tr, uint8_t const* begin_key_name, int begin_key_name_length, fdb_bool_t begin_or_equal, int begin_offset, uint8_t const* end_key_name, int end_key_name_length, fdb_bool_t end_or_equal, int end_offset, int limit, int target_bytes, FDBStreamingMode mode, int iteration, fdb_bool_t snapshot, fdb_bool_t reverse);
void fdb_transaction_set(FDBTransaction* tr, uint8_t const* key_name, int key_name_length, uint8_t const* value, int value_length);
void fdb_transaction_atomic_op(FDBTransaction* tr, uint8_t const* key_name, int key_name_length, uint8_t const* param, int param_length, FDBMutationType operation_type);
void fdb_transaction_clear(FDBTransaction* tr, uint8_t const* key_name, int key_name_length);
void fdb_transaction_clear_range(FDBTransaction* tr, uint8_t const* begin_key_name, int begin_key_name_length, uint8_t const* end_key_name, int end_key_name_length);
FDBFuture* fdb_transaction_watch(FDBTransaction* tr, uint8_t const* key_name, int key_name_length);
FDBFuture* fdb_transaction_commit(FDBTransaction* tr);
fdb_error_t fdb_transaction_get_committed_version(FDBTransaction* tr, int64_t* out_version);
FDBFuture* fdb_transaction_get_approximate_size(FDBTransaction* tr);
FDBFuture* fdb_transaction_get_versionstamp(FDBTransaction* tr);
FDBFuture* fdb_transaction_on_error(FDBTransaction* tr, fdb_error_t error);
void fdb_transaction_reset(FDBTransaction* tr);
fdb_error_t fdb_transaction_add_conflict_range(FDBTransaction* tr, uint8_t const* begin_key_name, int begin_key_name_length, uint8_t const* end_key_name, int end_key_name_length, FDBConflictRangeType type);
FDBFuture* fdb_transaction_get_estimated_range_size_bytes(FDBTransaction* tr, uint8_t const* begin_key_name, int begin_key_name_length, uint8_t const* end_key_name, int end_key_name_length);
FDBFuture* fdb_transaction_get_range_split_points(FDBTransaction* tr, uint8_t const* begin_key_name, int begin_key_name_length, uint8_t const* end_key_name, int end_key_name_length, int64_t chunk_size);
#endif
