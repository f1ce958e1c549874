// mpsgen's model of <os/signpost.h>: declarations only (see ../README.md).
#pragma once
#include <os/log.h>
#include <stdint.h>

typedef uint64_t os_signpost_id_t;
typedef uint8_t os_signpost_type_t;
#define OS_SIGNPOST_EVENT ((os_signpost_type_t)0x00)
#define OS_SIGNPOST_INTERVAL_BEGIN ((os_signpost_type_t)0x01)
#define OS_SIGNPOST_INTERVAL_END ((os_signpost_type_t)0x02)
#define OS_SIGNPOST_ID_NULL ((os_signpost_id_t)0)
#define OS_SIGNPOST_ID_INVALID ((os_signpost_id_t)~0)
#define OS_SIGNPOST_ID_EXCLUSIVE ((os_signpost_id_t)0xEEEEB0B5B2B2EEEE)

extern "C" {
os_signpost_id_t os_signpost_id_generate(os_log_t log);
os_signpost_id_t os_signpost_id_make_with_pointer(os_log_t log, const void* ptr);
bool os_signpost_enabled(os_log_t log);
}
#define os_signpost_event_emit(log, event_id, name, ...) ((void)(log), (void)(event_id))
#define os_signpost_interval_begin(log, interval_id, name, ...) ((void)(log), (void)(interval_id))
#define os_signpost_interval_end(log, interval_id, name, ...) ((void)(log), (void)(interval_id))
