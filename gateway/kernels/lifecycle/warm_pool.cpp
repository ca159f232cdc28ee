#include "gateway/kernels/lifecycle/warm_pool.hpp"

#include <algorithm>
#include <atomic>
#include <vector>

#include <boost/asio/steady_timer.hpp>

namespace callisto::gateway::kernels {

warm_pool::warm_pool(boost::asio::io_context& ioc, const launcher::kernelspec_catalog& catalog,
                     std::map<std::string, std::size_t> sizes, kernel_factory make, logger log)
    : ioc_(ioc), catalog_(catalog), make_(std::move(make)), log_(std::move(log)) {
    for (auto& [name, size] : sizes)
        if (size > 0) slots_[name].target = size;
}

void warm_pool::start() {
    std::vector<std::string> names;
    {
        std::lock_guard lock(mutex_);
        for (auto& [name, s] : slots_) names.push_back(name);
    }
    for (auto& name : names) {
        if (!catalog_.find(name)) {
            log_.warn("warm pool: no kernelspec '" + name + "'; its pool stays empty");
            continue;
        }
        log_.info("warm pool: keeping " + std::to_string(slots_.at(name).target) + " " + name +
                  " kernel(s) ready");
        refill(name);
    }
}

void warm_pool::refill(const std::string& kernelspec) {
    auto spec = catalog_.find(kernelspec);
    if (!spec) return;
    std::size_t to_start = 0;
    {
        std::lock_guard lock(mutex_);
        auto it = slots_.find(kernelspec);
        if (stopping_ || it == slots_.end()) return;
        auto& s = it->second;
        const std::size_t have = s.ready.size() + s.starting;
        to_start = have < s.target ? s.target - have : 0;
        s.starting += to_start;
    }
    for (std::size_t i = 0; i < to_start; ++i) {
        auto kernel = make_(*spec);
        {
            std::lock_guard lock(mutex_);
            auto& s = slots_[kernelspec];
            if (stopping_) {  // not started yet: nothing to stop
                --s.starting;
                continue;
            }
            s.starting_kernels.push_back(kernel);
        }
        kernel->start([this, kernelspec, kernel](kernel_outcome outcome) {
            on_started(kernelspec, kernel, outcome);
        });
    }
}

void warm_pool::on_started(const std::string& kernelspec, std::shared_ptr<kernel_session> kernel,
                           const kernel_outcome& outcome) {
    unsigned failures = 0;
    bool discard = false;
    {
        std::lock_guard lock(mutex_);
        auto& s = slots_[kernelspec];
        --s.starting;
        std::erase(s.starting_kernels, kernel);
        if (stopping_) {  // shutdown() has stopped it, and waits for it
            discard = true;
        } else if (outcome.ok()) {
            s.failures_in_a_row = 0;
            s.ready.push_back(kernel);
            filled_once_ =
                filled_once_ || std::all_of(slots_.begin(), slots_.end(), [](const auto& kv) {
                    return kv.second.ready.size() >= kv.second.target;
                });
            return;
        } else {
            failures = ++s.failures_in_a_row;
            discard = true;
        }
    }
    if (discard) kernel->shutdown([] {}, "warm pool stopping");
    if (failures == 0) return;
    // 1 s, 2 s, 4 s ... up to a minute between attempts for a kernelspec that will not start.
    auto delay = std::chrono::seconds(std::min(60u, 1u << std::min(failures - 1, 6u)));
    log_.warn("warm pool: " + kernelspec + " kernel failed to start (" + outcome.message +
              "); retrying in " + std::to_string(delay.count()) + " s");
    auto timer = std::make_shared<boost::asio::steady_timer>(ioc_, delay);
    timer->async_wait([this, timer, kernelspec](boost::system::error_code ec) {
        if (!ec) refill(kernelspec);
    });
}

std::shared_ptr<kernel_session> warm_pool::claim(const std::string& kernelspec) {
    std::shared_ptr<kernel_session> claimed;
    std::vector<std::shared_ptr<kernel_session>> stale;
    {
        std::lock_guard lock(mutex_);
        auto it = slots_.find(kernelspec);
        if (stopping_ || it == slots_.end()) return nullptr;
        auto& ready = it->second.ready;
        while (!ready.empty() && !claimed) {
            auto k = std::move(ready.front());
            ready.pop_front();
            // A pooled kernel that died while waiting is not handed out.
            if (k->state() == kernel_state::running)
                claimed = std::move(k);
            else
                stale.push_back(std::move(k));
        }
    }
    for (auto& k : stale) k->shutdown([] {}, "died in the warm pool");
    refill(kernelspec);
    return claimed;
}

std::size_t warm_pool::ready(const std::string& kernelspec) const {
    std::lock_guard lock(mutex_);
    auto it = slots_.find(kernelspec);
    return it == slots_.end() ? 0 : it->second.ready.size();
}

std::size_t warm_pool::target(const std::string& kernelspec) const {
    std::lock_guard lock(mutex_);
    auto it = slots_.find(kernelspec);
    return it == slots_.end() ? 0 : it->second.target;
}

std::map<std::string, std::pair<std::size_t, std::size_t>> warm_pool::levels() const {
    std::lock_guard lock(mutex_);
    std::map<std::string, std::pair<std::size_t, std::size_t>> out;
    for (const auto& [name, s] : slots_) out[name] = {s.ready.size(), s.target};
    return out;
}

void warm_pool::shutdown(std::function<void()> done) {
    std::vector<std::shared_ptr<kernel_session>> all;
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
        for (auto& [name, s] : slots_) {
            for (auto& k : s.ready) all.push_back(k);
            s.ready.clear();
            // Still starting: stopped now rather than left to their start's end.
            all.insert(all.end(), s.starting_kernels.begin(), s.starting_kernels.end());
        }
    }
    if (all.empty()) return done();
    auto remaining = std::make_shared<std::atomic<std::size_t>>(all.size());
    auto shared_done = std::make_shared<std::function<void()>>(std::move(done));
    for (auto& k : all)
        k->shutdown(
            [remaining, shared_done] {
                if (--*remaining == 0) (*shared_done)();
            },
            "server shutting down");
}

bool warm_pool::filled_once() const {
    std::lock_guard lock(mutex_);
    return filled_once_ || slots_.empty();
}

}  // namespace callisto::gateway::kernels
