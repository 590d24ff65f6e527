/* The C layouts the Rust declarations must match (src/lib.rs, tests). */
#include <stddef.h>

#include <rtmem/rtmem.h>

#define L(type, member) offsetof(struct type, member)

const size_t rtmem_sys_layout[] = {
    sizeof(struct rtm_heap_stats),
    L(rtm_heap_stats, corruptions),
    sizeof(struct rtm_heap_config),
    L(rtm_heap_config, lock_timeout_us),
    sizeof(struct rtm_heap_limits),
    sizeof(struct rtm_heap_lock_stats),
    L(rtm_heap_lock_stats, timeouts),
    sizeof(struct rtm_arena_config),
    L(rtm_arena_config, flags),
    sizeof(struct rtm_arena_report),
    L(rtm_arena_report, verified),
    sizeof(struct rtm_arena),
    L(rtm_arena, report),
    L(rtm_arena, message),
    L(rtm_arena, internal),
    _Alignof(struct rtm_arena),
    sizeof(struct rtm_shared_config),
    L(rtm_shared_config, lock_timeout_us),
    sizeof(struct rtm_shared_info),
    L(rtm_shared_info, base),
    RTM_HEAP_MIN_ALIGN,
    sizeof(struct rtm_heap_corruption),
    L(rtm_heap_corruption, what),
    L(rtm_heap_config, on_corruption),
    L(rtm_heap_config, lock),
    L(rtm_heap_limits, max_align),
    L(rtm_heap_limits, lock),
    L(rtm_heap_lock_stats, timeout_us),
    L(rtm_arena_config, name),
    L(rtm_arena_config, sysv_key),
    L(rtm_arena_config, prefault),
    L(rtm_arena_config, thp),
    L(rtm_arena_report, lock_state),
    L(rtm_arena_report, locked_bytes),
    L(rtm_arena_report, file_pmd_bytes),
    L(rtm_shared_config, page_bytes),
    L(rtm_shared_config, thp),
    L(rtm_shared_info, creator_pid),
    sizeof(struct rtm_shared_orphan),
    (size_t)-1,
};
