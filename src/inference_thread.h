// depthbatch (internal) — the one thread that owns a model: every forward pass of a job runs on it.
//
// Why one thread: LibTorch keeps per-thread state that each new thread pays for on its first forward: CUDA and
// cuDNN/cuBLAS handles, the current stream, the TorchScript executor's profiling state, an OpenMP team on the CPU.
// When the TBB worker that happened to run the pipeline's serial inference stage did the forward, each of the 16
// workers of a 16-core GPU machine paid 1-4 s once (issue 31: 20 of 24 seconds of a 96-frame job). A CUDA server
// keeps one thread per device for the same reason. DepthModel (depth_model.h) owns one InferenceThread; callers on
// any thread hand it work and take results back.
//
// Work comes as tasks, run one at a time in the order they were queued. A task may launch asynchronous device work
// and defer() its completion (waiting for the device, handing the result over): the thread then runs up to
// `lookahead` later tasks before it completes the oldest deferred one, so that the device is given the next batch
// before the host waits for the previous one. A completion whose work is done (its `ready` says so) runs at once;
// one that is not yet done waits while the thread can still launch, polled every 50 µs, so that a batch arriving
// meanwhile is launched without waiting for it. Deferred completions run in the order they were deferred, always
// before the thread stops.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <thread>
#include <type_traits>
#include <utility>

namespace depthbatch::detail {

class InferenceThread {
public:
    /// Starts the thread. `lookahead` >= 0: tasks that may run while a deferred completion waits.
    explicit InferenceThread(int lookahead = 1);
    /// Runs every queued task and deferred completion, then joins the thread (stop()).
    ~InferenceThread();
    InferenceThread(const InferenceThread&) = delete;
    InferenceThread& operator=(const InferenceThread&) = delete;

    /// Runs `f` on the thread and waits for it; returns its result or rethrows its exception here. Called from the
    /// thread itself (a task calling back into the model), `f` runs inline. Tasks queued before it run first.
    template <class F> auto call(F&& f) -> std::invoke_result_t<F> {
        using R = std::invoke_result_t<F>;
        if (on_thread()) return f();
        std::packaged_task<R()> task(std::forward<F>(f));
        std::future<R> done = task.get_future();
        post([&task] { task(); });
        return done.get();
    }

    /// Queues `task` and returns at once. The task must not throw (wrap it: call() and the model's submit do).
    void post(std::function<void()> task);

    /// From a task on this thread: run `complete` later, after at most `lookahead` further tasks, in the order of
    /// defer() calls. `ready` (never blocking; empty = always) says whether `complete` would run without waiting
    /// for the device. Throws std::logic_error when called from another thread.
    void defer(std::function<void()> complete, std::function<bool()> ready = {});

    /// Runs what is queued and deferred, then ends the thread. Idempotent; never call it from the thread itself.
    void stop();

    /// True on the thread itself.
    bool on_thread() const { return std::this_thread::get_id() == id_; }
    std::thread::id id() const { return id_; }

private:
    void loop();
    const int lookahead_;
    std::mutex mutex_;
    std::condition_variable wake_;
    struct Deferred {
        std::function<void()> complete;
        std::function<bool()> ready;
    };
    std::deque<std::function<void()>> tasks_;
    std::deque<Deferred> deferred_;
    bool stopping_ = false;
    std::thread::id id_;
    std::thread thread_;  // last: started once the members above exist
};

}  // namespace depthbatch::detail
