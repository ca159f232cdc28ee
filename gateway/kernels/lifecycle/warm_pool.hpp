#pragma once
// Pre-started kernels, per kernelspec, handed out by POST /api/kernels so a client gets a
// kernel that already answers instead of waiting for Python to boot. Each pooled kernel is
// handed out once, then the pool refills in the background. Kernels that fail to start are
// retried with a growing delay, so a broken kernelspec cannot spin.

#include <chrono>
#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "common/logger.hpp"
#include "gateway/kernels/session/kernel_session.hpp"
#include "launcher/kernelspec/kernelspec_catalog.hpp"

namespace callisto::gateway::kernels {

class warm_pool {
public:
    using kernel_factory = std::function<std::shared_ptr<kernel_session>(launcher::kernelspec)>;

    // sizes: kernelspec name -> number of ready kernels to keep.
    warm_pool(boost::asio::io_context& ioc, const launcher::kernelspec_catalog& catalog,
              std::map<std::string, std::size_t> sizes, kernel_factory make, logger log);

    void start();

    // A ready, never-used kernel of this kernelspec, or null (the pool is empty or disabled).
    std::shared_ptr<kernel_session> claim(const std::string& kernelspec);

    // Stops refilling and shuts every pooled kernel down.
    void shutdown(std::function<void()> done);

    std::size_t ready(const std::string& kernelspec) const;
    // How many it keeps ready for this kernelspec (0: no pool for it).
    std::size_t target(const std::string& kernelspec) const;
    // kernelspec -> {ready, target}, for the metrics.
    std::map<std::string, std::pair<std::size_t, std::size_t>> levels() const;

    // True once every kernelspec's pool has held its target at the same time (at once with no
    // pool): start-up is over. Claims emptying it later do not make it false again.
    bool filled_once() const;

private:
    struct slot {
        std::size_t target = 0;
        std::deque<std::shared_ptr<kernel_session>> ready;
        std::size_t starting = 0;  // reserved by refill, then made and started
        // The kernels started and not yet ready: shutdown waits for them too, so none is left
        // starting (its process and workdir) when the server has stopped.
        std::vector<std::shared_ptr<kernel_session>> starting_kernels;
        unsigned failures_in_a_row = 0;
    };
    void refill(const std::string& kernelspec);
    void on_started(const std::string& kernelspec, std::shared_ptr<kernel_session> kernel,
                    const kernel_outcome& outcome);

    boost::asio::io_context& ioc_;
    const launcher::kernelspec_catalog& catalog_;
    kernel_factory make_;
    logger log_;
    mutable std::mutex mutex_;
    std::map<std::string, slot> slots_;
    bool stopping_ = false;
    bool filled_once_ = false;
};

}  // namespace callisto::gateway::kernels
