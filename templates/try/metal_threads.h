// mpsgen's model of a Metal threadgroup on the CPU, for `mpsgen try` of reduction kernels.
// Not Apple's or PyTorch's code: a re-statement of the documented behaviour kernels rely on.
// Included after metal_shim.h.
//
// Every thread of a threadgroup runs as a fiber (ucontext) on one OS thread. A fiber runs until
// it reaches a SIMD-group function, a threadgroup_barrier or its end; the fibers run in an
// order shuffled afresh each round (seeded), so a read of threadgroup memory that no barrier
// orders after its write sees whatever is there. Then:
//   - the lanes of a SIMD-group waiting at the same SIMD-group function (the same call site)
//     are its active lanes: they exchange values; a lane that reads an inactive lane (one that
//     returned, waits elsewhere, or does not exist in a partial SIMD-group) gets garbage;
//   - when no SIMD-group function is pending, a barrier releases once every thread waits at it;
//     a thread that returned while others wait is reported (undefined behaviour in Metal).
// Threadgroup memory starts as garbage in every threadgroup, as do the output buffers.
#pragma once
#include <ucontext.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>

typedef unsigned long ulong;

// the Metal vectors the reduction helpers use
struct int2 {
  int x, y;
  int2() : x(0), y(0) {}
  explicit int2(int v) : x(v), y(v) {}
  int2(int a, int b) : x(a), y(b) {}
};
struct float3 {
  float x, y, z;
  float3() : x(0), y(0), z(0) {}
  template <typename A, typename B, typename C>
  float3(A a, B b, C c) : x(float(a)), y(float(b)), z(float(c)) {}
};

template <typename T, typename U>
inline T as_type(U u) {
  static_assert(sizeof(T) == sizeof(U), "as_type between types of different sizes");
  T t;
  std::memcpy(&t, &u, sizeof(T));
  return t;
}

#define kernel
#define threadgroup
#define IF_CONSTEXPR constexpr
// `threadgroup T name[N];` in a kernel (rewritten so by mpsgen try): storage every thread of
// the threadgroup shares, garbage when the threadgroup starts
#define MPSGEN_TG_ARRAY(NAME, COUNT, ...) \
  static __VA_ARGS__ NAME[COUNT];         \
  mpsgen_threads::touch(NAME, sizeof(NAME))

// Switching fibers: on x86-64 ELF a few instructions saving the callee-saved registers (glibc's
// swapcontext also saves the signal mask, a system call each switch: ~4x slower here);
// elsewhere ucontext.
#if defined(__x86_64__) && defined(__ELF__)
#define MPSGEN_FAST_SWITCH 1
extern "C" void mpsgen_switch(void** save_sp, void* to_sp);
asm(R"(
  .text
  .globl mpsgen_switch
  .type mpsgen_switch, @function
mpsgen_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size mpsgen_switch, .-mpsgen_switch
)");
#endif

namespace mpsgen_threads {
constexpr unsigned W = 32;
constexpr size_t STACK = 64 * 1024;
constexpr size_t SLOT = 64;  // bytes a lane can put into a SIMD-group function
enum State { RUNNABLE, AT_SIMD, AT_BARRIER, DONE };

struct Fiber {
  ucontext_t ctx;
  void* sp = nullptr;  // (MPSGEN_FAST_SWITCH) its saved stack pointer
  State state = DONE;
  const void* site = nullptr;
  alignas(16) unsigned char value[SLOT];
  unsigned tid = 0;
};

struct Machine {
  std::vector<Fiber> fibers;
  std::vector<char*> stacks;
  std::vector<unsigned char> snaps;  // per SIMD-group: 32 slots of the last resolved call
  std::vector<uint32_t> masks;       // per SIMD-group: its active lanes at that call
  std::vector<void*> touched;        // threadgroup arrays garbage-filled in this threadgroup
  ucontext_t sched;
  void* sched_sp = nullptr;
  Fiber* current = nullptr;
  unsigned size = 0;
  uint64_t rng = 88172645463325252ull;
  std::function<void(unsigned)> body;
  const char* error = nullptr;
};
static Machine M;

inline uint64_t next() {
  M.rng ^= M.rng << 13;
  M.rng ^= M.rng >> 7;
  M.rng ^= M.rng << 17;
  return M.rng;
}
inline void garbage(void* p, size_t n) {
  unsigned char* b = static_cast<unsigned char*>(p);
  for (size_t i = 0; i < n; ++i) b[i] = static_cast<unsigned char>(next() >> 24);
}
inline void touch(void* p, size_t n) {
  if (std::find(M.touched.begin(), M.touched.end(), p) != M.touched.end()) return;
  M.touched.push_back(p);
  garbage(p, n);
}

inline void to_scheduler(Fiber* f) {
#ifdef MPSGEN_FAST_SWITCH
  mpsgen_switch(&f->sp, M.sched_sp);
#else
  swapcontext(&f->ctx, &M.sched);
#endif
}

static void trampoline() {
  Fiber* f = M.current;
  M.body(f->tid);
  f->state = DONE;
#ifdef MPSGEN_FAST_SWITCH
  for (;;) to_scheduler(f);  // never resumed
#endif
  // (ucontext: uc_link returns to the scheduler)
}

inline void park(State s, const void* site) {
  Fiber* f = M.current;
  f->state = s;
  f->site = site;
  to_scheduler(f);
}

// Run `body(tid)` for the `size` threads of one threadgroup; false (M.error set) when the
// threads did not all finish together.
inline bool run_threadgroup(unsigned size, uint64_t seed, std::function<void(unsigned)> body) {
  M.rng = seed * 2654435761ull + 0x9e3779b97f4a7c15ull;
  M.size = size;
  M.body = std::move(body);
  M.touched.clear();
  M.error = nullptr;
  if (M.fibers.size() < size) M.fibers.resize(size);
  while (M.stacks.size() < size) M.stacks.push_back(static_cast<char*>(std::malloc(STACK)));
  unsigned groups = (size + W - 1) / W;
  M.snaps.assign(groups * W * SLOT, 0);
  M.masks.assign(groups, 0);
  for (unsigned t = 0; t < size; ++t) {
    Fiber& f = M.fibers[t];
    f.tid = t;
    f.state = RUNNABLE;
#ifdef MPSGEN_FAST_SWITCH
    // a stack mpsgen_switch "returns" into trampoline from: six registers, then its address
    uintptr_t top = (reinterpret_cast<uintptr_t>(M.stacks[t]) + STACK) & ~uintptr_t(15);
    void** sp = reinterpret_cast<void**>(top);
    *--sp = nullptr;  // trampoline's return address (it never returns)
    *--sp = reinterpret_cast<void*>(&trampoline);
    for (int r = 0; r < 6; ++r) *--sp = nullptr;
    f.sp = sp;
#else
    getcontext(&f.ctx);
    f.ctx.uc_stack.ss_sp = M.stacks[t];
    f.ctx.uc_stack.ss_size = STACK;
    f.ctx.uc_link = &M.sched;
    makecontext(&f.ctx, trampoline, 0);
#endif
  }
  std::vector<unsigned> order(size);
  for (;;) {
    for (unsigned t = 0; t < size; ++t) order[t] = t;
    for (unsigned t = size; t > 1; --t) std::swap(order[t - 1], order[next() % t]);
    for (unsigned t : order) {
      Fiber& f = M.fibers[t];
      if (f.state != RUNNABLE) continue;
      M.current = &f;
#ifdef MPSGEN_FAST_SWITCH
      mpsgen_switch(&M.sched_sp, f.sp);
#else
      swapcontext(&M.sched, &f.ctx);
#endif
    }
    bool progressed = false;
    for (unsigned g = 0; g < groups; ++g) {
      const void* site = nullptr;
      uint32_t mask = 0;
      for (unsigned l = 0; l < W && g * W + l < size; ++l) {
        Fiber& f = M.fibers[g * W + l];
        if (f.state != AT_SIMD || (site != nullptr && f.site != site)) continue;
        site = f.site;
        mask |= 1u << l;
      }
      if (!mask) continue;
      M.masks[g] = mask;
      for (unsigned l = 0; l < W; ++l) {
        if (mask >> l & 1u) {
          Fiber& f = M.fibers[g * W + l];
          std::memcpy(&M.snaps[(g * W + l) * SLOT], f.value, SLOT);
          f.state = RUNNABLE;
        }
      }
      progressed = true;
    }
    if (progressed) continue;
    unsigned waiting = 0, done = 0;
    for (unsigned t = 0; t < size; ++t) {
      waiting += M.fibers[t].state == AT_BARRIER;
      done += M.fibers[t].state == DONE;
    }
    if (done == size) return true;
    if (done) {
      M.error = "a thread of the threadgroup returned while others wait at threadgroup_barrier (undefined in Metal)";
      return false;
    }
    for (unsigned t = 0; t < size; ++t) M.fibers[t].state = RUNNABLE;
    (void)waiting;
  }
}

inline unsigned lane() { return M.current->tid % W; }

// Put `v` into the SIMD-group function called from `site`, wait for the active lanes, and
// read lane `l`'s value (garbage from an inactive lane)
template <typename T>
inline void enter(const T& v, const void* site) {
  static_assert(sizeof(T) <= SLOT, "a SIMD-group value wider than the model holds");
  std::memcpy(M.current->value, &v, sizeof(T));
  park(AT_SIMD, site);
}
inline bool active(unsigned l) { return M.masks[M.current->tid / W] >> l & 1u; }
template <typename T>
inline T value_of(unsigned l) {
  T t;
  if (l < W && active(l)) {
    std::memcpy(&t, &M.snaps[((M.current->tid / W) * W + l) * SLOT], sizeof(T));
  } else {
    garbage(&t, sizeof(T));
  }
  return t;
}
}  // namespace mpsgen_threads

#define MPSGEN_SITE __builtin_return_address(0)

namespace metal {
template <typename T, size_t N>
using array = std::array<T, N>;
enum class mem_flags { mem_none, mem_device, mem_threadgroup, mem_texture };
__attribute__((noinline)) inline void threadgroup_barrier(mem_flags) {
  mpsgen_threads::park(mpsgen_threads::AT_BARRIER, nullptr);
}
inline void simdgroup_barrier(mem_flags) {}

#define MPSGEN_SIMD_FOLD(NAME, EXPR)                                           \
  template <typename T>                                                        \
  __attribute__((noinline)) T NAME(T v) {                                      \
    mpsgen_threads::enter(v, MPSGEN_SITE);                                     \
    bool first = true;                                                         \
    T r = v;                                                                   \
    for (unsigned l = 0; l < mpsgen_threads::W; ++l) {                         \
      if (!mpsgen_threads::active(l)) continue;                                \
      T a = mpsgen_threads::value_of<T>(l);                                    \
      r = first ? a : T(EXPR);                                                 \
      first = false;                                                           \
    }                                                                          \
    return r;                                                                  \
  }
MPSGEN_SIMD_FOLD(simd_sum, r + a)
MPSGEN_SIMD_FOLD(simd_product, r * a)
MPSGEN_SIMD_FOLD(simd_max, (a > r ? a : r))
MPSGEN_SIMD_FOLD(simd_min, (a < r ? a : r))
#undef MPSGEN_SIMD_FOLD

template <typename T>
__attribute__((noinline)) T simd_broadcast(T v, unsigned short from) {
  mpsgen_threads::enter(v, MPSGEN_SITE);
  return mpsgen_threads::value_of<T>(from);
}
template <typename T>
__attribute__((noinline)) T simd_shuffle(T v, unsigned short from) {
  mpsgen_threads::enter(v, MPSGEN_SITE);
  return mpsgen_threads::value_of<T>(from);
}
// lanes past the end keep their own value
template <typename T>
__attribute__((noinline)) T simd_shuffle_down(T v, unsigned short delta) {
  mpsgen_threads::enter(v, MPSGEN_SITE);
  unsigned l = mpsgen_threads::lane() + delta;
  return l < mpsgen_threads::W ? mpsgen_threads::value_of<T>(l) : v;
}
template <typename T>
__attribute__((noinline)) T simd_shuffle_up(T v, unsigned short delta) {
  mpsgen_threads::enter(v, MPSGEN_SITE);
  unsigned me = mpsgen_threads::lane();
  return me >= delta ? mpsgen_threads::value_of<T>(me - delta) : v;
}
template <typename T>
__attribute__((noinline)) T simd_shuffle_xor(T v, unsigned short mask) {
  mpsgen_threads::enter(v, MPSGEN_SITE);
  return mpsgen_threads::value_of<T>(mpsgen_threads::lane() ^ mask);
}
// lanes whose source is past the end get `fill`
template <typename T>
__attribute__((noinline)) T simd_shuffle_and_fill_down(T v, T fill, unsigned short delta) {
  mpsgen_threads::enter(v, MPSGEN_SITE);
  unsigned l = mpsgen_threads::lane() + delta;
  return l < mpsgen_threads::W ? mpsgen_threads::value_of<T>(l) : fill;
}
__attribute__((noinline)) inline uint64_t simd_ballot(bool b) {
  mpsgen_threads::enter(b, MPSGEN_SITE);
  uint64_t r = 0;
  for (unsigned l = 0; l < mpsgen_threads::W; ++l)
    if (mpsgen_threads::active(l) && mpsgen_threads::value_of<bool>(l)) r |= 1ull << l;
  return r;
}
__attribute__((noinline)) inline bool simd_any(bool b) {
  mpsgen_threads::enter(b, MPSGEN_SITE);
  for (unsigned l = 0; l < mpsgen_threads::W; ++l)
    if (mpsgen_threads::active(l) && mpsgen_threads::value_of<bool>(l)) return true;
  return false;
}
__attribute__((noinline)) inline bool simd_all(bool b) {
  mpsgen_threads::enter(b, MPSGEN_SITE);
  for (unsigned l = 0; l < mpsgen_threads::W; ++l)
    if (mpsgen_threads::active(l) && !mpsgen_threads::value_of<bool>(l)) return false;
  return true;
}
inline unsigned ctz(uint64_t v) { return v ? __builtin_ctzll(v) : 64; }
}  // namespace metal

namespace c10 {
namespace metal {
constexpr unsigned simdgroup_size = 32;
constexpr unsigned max_ndim = 16;
template <typename T1, typename T2>
struct pair {
  T1 first;
  T2 second;
};
// complex multiplication (c10/metal/utils.h)
inline float2 mul(float2 a, float2 b) { return float2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x); }
}  // namespace metal
}  // namespace c10
