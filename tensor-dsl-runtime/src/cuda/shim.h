// The CUDA simulator's host shim: what generated kernel text needs from CUDA, in standard C++.
// Blocks run one after another; a block's threads are fibers (ucontext) on the calling thread,
// switched at each __syncthreads, so a barrier holds exactly as on a device. Kernels without
// barriers run their threads in a plain loop.
#include <math.h>
#include <cstring>
#include <vector>
#include <ucontext.h>


struct tdsl_dim3 { unsigned int x, y, z; };
static thread_local tdsl_dim3 threadIdx, blockIdx, blockDim, gridDim;

#define __global__
#define __device__
#define __forceinline__ inline
// One block runs at a time on a thread, so a function-local static is the block's memory.
#define __shared__ static thread_local
#define TDSL_ENTRY static

namespace tdsl_sim {
struct Fiber {
    ucontext_t context;
    std::vector<char> stack;
    bool done;
    unsigned int index;
};
static thread_local ucontext_t scheduler;
static thread_local std::vector<Fiber>* fibers = nullptr;
static thread_local Fiber* current = nullptr;
static thread_local void (*entry)(const void*) = nullptr;
static thread_local const void* entry_args = nullptr;

static void trampoline() {
    entry(entry_args);
    current->done = true;
    // Returning resumes `uc_link`, the scheduler.
}
}  // namespace tdsl_sim

// CUDA's bit reinterpretations, for `powi` exponents carried in a scalar slot.
static inline int __float_as_int(float x) {
    int n;
    std::memcpy(&n, &x, sizeof n);
    return n;
}
static inline int __double2loint(double x) {
    long long n;
    std::memcpy(&n, &x, sizeof n);
    return (int)(unsigned int)(n & 0xffffffffLL);
}

static void __syncthreads() {
    tdsl_sim::Fiber* self = tdsl_sim::current;
    swapcontext(&self->context, &tdsl_sim::scheduler);
    threadIdx.x = self->index;
}

// Runs `kernel(args)` over the grid. Returns 0, or 1 when the threads of a block did not all
// reach the same barriers (undefined behaviour on a device).
extern "C" int tdsl_sim_run(void (*kernel)(const void*), const void* args, unsigned int grid,
                            unsigned int block, int barriers) {
    gridDim = {grid, 1, 1};
    blockDim = {block, 1, 1};
    threadIdx = {0, 0, 0};
    blockIdx = {0, 0, 0};
    if (!barriers) {
        for (unsigned int b = 0; b < grid; ++b)
            for (unsigned int t = 0; t < block; ++t) {
                blockIdx.x = b;
                threadIdx.x = t;
                kernel(args);
            }
        return 0;
    }
    std::vector<tdsl_sim::Fiber> fibers(block);
    for (auto& fiber : fibers) fiber.stack.resize(64 * 1024);
    tdsl_sim::fibers = &fibers;
    tdsl_sim::entry = kernel;
    tdsl_sim::entry_args = args;
    int status = 0;
    for (unsigned int b = 0; b < grid && status == 0; ++b) {
        blockIdx.x = b;
        for (unsigned int t = 0; t < block; ++t) {
            tdsl_sim::Fiber& fiber = fibers[t];
            fiber.done = false;
            fiber.index = t;
            getcontext(&fiber.context);
            fiber.context.uc_stack.ss_sp = fiber.stack.data();
            fiber.context.uc_stack.ss_size = fiber.stack.size();
            fiber.context.uc_link = &tdsl_sim::scheduler;
            makecontext(&fiber.context, tdsl_sim::trampoline, 0);
        }
        // Each round runs every thread to its next barrier or its end.
        for (;;) {
            unsigned int finished = 0;
            for (unsigned int t = 0; t < block; ++t) {
                tdsl_sim::Fiber& fiber = fibers[t];
                if (fiber.done) {
                    ++finished;
                    continue;
                }
                tdsl_sim::current = &fiber;
                threadIdx.x = t;
                swapcontext(&tdsl_sim::scheduler, &fiber.context);
                if (fiber.done) ++finished;
            }
            if (finished == block) break;
            if (finished != 0) {
                status = 1;
                break;
            }
        }
    }
    tdsl_sim::fibers = nullptr;
    tdsl_sim::current = nullptr;
    return status;
}
