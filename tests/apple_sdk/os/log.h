// mpsgen's model of <os/log.h>: declarations only (see ../README.md).
#pragma once
#include <stdint.h>

typedef struct os_log_s* os_log_t;
typedef uint8_t os_log_type_t;
#define OS_LOG_TYPE_DEFAULT ((os_log_type_t)0x00)
#define OS_LOG_TYPE_INFO ((os_log_type_t)0x01)
#define OS_LOG_TYPE_DEBUG ((os_log_type_t)0x02)
#define OS_LOG_TYPE_ERROR ((os_log_type_t)0x10)
#define OS_LOG_DEFAULT ((os_log_t)0)

extern "C" {
os_log_t os_log_create(const char* subsystem, const char* category);
bool os_log_type_enabled(os_log_t oslog, os_log_type_t type);
}
#define os_log(log, format, ...) ((void)(log), (void)(format))
#define os_log_info(log, format, ...) ((void)(log), (void)(format))
#define os_log_debug(log, format, ...) ((void)(log), (void)(format))
#define os_log_error(log, format, ...) ((void)(log), (void)(format))
