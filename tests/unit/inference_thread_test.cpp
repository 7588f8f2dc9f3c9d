// The model's inference thread (src/inference_thread.h): one thread runs every task, in order; call() waits and
// rethrows; a task's deferred completion lets `lookahead` later tasks run first; stop() finishes everything.
#include "inference_thread.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using depthbatch::detail::InferenceThread;

TEST(InferenceThread, EveryTaskRunsOnTheOneThreadInOrder) {
    InferenceThread t;
    std::vector<std::thread::id> ids;
    std::vector<int> order;
    std::vector<std::thread> callers;
    std::mutex m;
    for (int i = 0; i < 4; ++i)
        callers.emplace_back([&, i] {
            for (int k = 0; k < 25; ++k)
                t.call([&] {
                    std::lock_guard<std::mutex> lock(m);
                    ids.push_back(std::this_thread::get_id());
                    order.push_back(i);
                });
        });
    for (auto& c : callers) c.join();
    ASSERT_EQ(ids.size(), 100u);
    for (const auto& id : ids) EXPECT_EQ(id, t.id());
    EXPECT_NE(t.id(), std::this_thread::get_id());
    // One caller's tasks in the order it queued them (posts from one thread are never reordered).
    std::vector<int> seq;
    t.call([&] {
        for (int k = 0; k < 5; ++k) t.post([&seq, k] { seq.push_back(k); });
    });
    t.call([] {});
    EXPECT_EQ(seq, (std::vector<int>{0, 1, 2, 3, 4}));
}

TEST(InferenceThread, CallReturnsRethrowsAndRunsInlineOnItsOwnThread) {
    InferenceThread t;
    EXPECT_EQ(t.call([] { return 42; }), 42);
    try {
        t.call([]() -> int { throw std::runtime_error("forward failed"); });
        FAIL() << "no exception";
    } catch (const std::runtime_error& e) {
        EXPECT_EQ(std::string(e.what()), "forward failed");
    }
    // A task calling back in does not wait for itself (it would never return).
    EXPECT_EQ(t.call([&] { return t.call([] { return 7; }) + 1; }), 8);
    EXPECT_THROW(t.defer([] {}), std::logic_error) << "defer belongs to tasks on the thread";
}

TEST(InferenceThread, ADeferredCompletionLetsTheNextTaskLaunchFirst) {
    for (int lookahead : {0, 1, 2}) {
        InferenceThread t(lookahead);
        std::vector<std::string> log;
        std::promise<void> go;
        std::shared_future<void> gate = go.get_future().share();
        // Hold the thread until three launches are queued, so the order is the loop's, not the caller's timing.
        t.post([gate] { gate.wait(); });
        for (int k = 0; k < 3; ++k)
            t.post([&, k] {
                log.push_back("launch " + std::to_string(k));
                t.defer([&, k] { log.push_back("complete " + std::to_string(k)); }, [] { return false; });
            });
        go.set_value();
        t.stop();  // runs what is left, completions included
        std::vector<std::string> want;
        if (lookahead == 0) want = {"launch 0", "complete 0", "launch 1", "complete 1", "launch 2", "complete 2"};
        if (lookahead == 1) want = {"launch 0", "launch 1", "complete 0", "launch 2", "complete 1", "complete 2"};
        if (lookahead == 2) want = {"launch 0", "launch 1", "launch 2", "complete 0", "complete 1", "complete 2"};
        EXPECT_EQ(log, want) << "lookahead " << lookahead;
    }
}

TEST(InferenceThread, AReadyCompletionRunsWithoutWaitingForMoreWork) {
    InferenceThread t(1);
    std::promise<int> result;
    t.post([&] { t.defer([&] { result.set_value(5); }, [] { return true; }); });
    // Nothing else is queued: the completion must still run (the caller waits on it).
    auto f = result.get_future();
    ASSERT_EQ(f.wait_for(std::chrono::seconds(10)), std::future_status::ready);
    EXPECT_EQ(f.get(), 5);
    // Not ready yet: it is polled until it is, with no other task to run.
    std::atomic<bool> done{false};
    std::promise<void> completed;
    t.post([&] { t.defer([&] { completed.set_value(); }, [&] { return done.load(); }); });
    auto c = completed.get_future();
    EXPECT_EQ(c.wait_for(std::chrono::milliseconds(50)), std::future_status::timeout);
    done = true;
    EXPECT_EQ(c.wait_for(std::chrono::seconds(10)), std::future_status::ready);
}
