#include "inference_thread.h"

#include <chrono>
#include <stdexcept>

namespace depthbatch::detail {

InferenceThread::InferenceThread(int lookahead) : lookahead_(lookahead < 0 ? 0 : lookahead) {
    std::promise<std::thread::id> started;
    std::future<std::thread::id> id = started.get_future();
    thread_ = std::thread([this, &started] {
        started.set_value(std::this_thread::get_id());
        loop();
    });
    id_ = id.get();
}

InferenceThread::~InferenceThread() { stop(); }

void InferenceThread::post(std::function<void()> task) {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        tasks_.push_back(std::move(task));
    }
    wake_.notify_one();
}

void InferenceThread::defer(std::function<void()> complete, std::function<bool()> ready) {
    if (!on_thread()) throw std::logic_error("InferenceThread::defer called from another thread");
    std::lock_guard<std::mutex> lock(mutex_);
    deferred_.push_back({std::move(complete), std::move(ready)});
}

void InferenceThread::stop() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (stopping_ && !thread_.joinable()) return;
        stopping_ = true;
    }
    wake_.notify_one();
    if (thread_.joinable()) thread_.join();
}

void InferenceThread::loop() {
    for (;;) {
        std::function<void()> next;
        {
            std::unique_lock<std::mutex> lock(mutex_);
            wake_.wait(lock, [this] { return stopping_ || !tasks_.empty() || !deferred_.empty(); });
            const bool may_launch = static_cast<int>(deferred_.size()) <= lookahead_;
            // A new task first while few completions wait (the device gets its next batch before the host waits
            // for the previous one); then the oldest completion: at once when its work is done or nothing more may
            // be launched, else after polling while a new task may still arrive.
            if (!tasks_.empty() && may_launch) {
                next = std::move(tasks_.front());
                tasks_.pop_front();
            } else if (!deferred_.empty()) {
                Deferred& d = deferred_.front();
                if (may_launch && !stopping_ && d.ready && !d.ready()) {
                    wake_.wait_for(lock, std::chrono::microseconds(50));
                    continue;
                }
                next = std::move(d.complete);
                deferred_.pop_front();
            } else if (!tasks_.empty()) {
                next = std::move(tasks_.front());
                tasks_.pop_front();
            } else {
                return;  // stopping, nothing left
            }
        }
        next();
    }
}

}  // namespace depthbatch::detail
