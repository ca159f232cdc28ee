#pragma once
// One envd WatchDir: inotify on a directory of the sandbox's workdir (a host directory, so the
// gateway watches it itself), and with `recursive` on its subdirectories, those made later
// too. Directories are opened one component at a time without following a link, and watched
// through the opened descriptor: a link in the sandbox never points a watch outside it. At
// most max_watches directories, max_depth levels. Events go to one callback, on the watch's
// strand, until stop() or the directory itself goes.

#include <cstddef>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <variant>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/strand.hpp>

#include "common/unique_fd.hpp"
#include "gateway/e2b/envd_files.hpp"
#include "gateway/e2b/watch_rpc.hpp"

namespace callisto::gateway::e2b {

class directory_watch : public std::enable_shared_from_this<directory_watch> {
public:
    static constexpr std::size_t max_watches = 1024;
    static constexpr int max_depth = 16;
    // name: relative to the watched directory; type: envd's EventType name.
    using event_fn = std::function<void(const std::string& name, const std::string& type)>;

    // The watch, or why not: not_found, invalid_argument for what is not a directory (a link
    // included), resource_exhausted when inotify refuses.
    static std::variant<std::shared_ptr<directory_watch>, envd_error> open(
        boost::asio::io_context& ioc, const std::filesystem::path& workdir,
        const watch_request& request);

    directory_watch(boost::asio::io_context& ioc, std::filesystem::path workdir,
                    watch_request request, unique_fd inotify);
    void run(event_fn on_event, std::function<void()> on_end);
    void stop();  // thread-safe

private:
    // Watches the directory at `relative` (to the watched one); with recursive, what is below.
    std::optional<envd_error> add(const std::string& relative, int depth);
    void read();

    boost::asio::strand<boost::asio::io_context::executor_type> strand_;
    const std::filesystem::path workdir_;
    const watch_request request_;
    boost::asio::posix::stream_descriptor inotify_;
    std::map<int, std::pair<std::string, int>> dirs_;  // wd -> relative path, depth
    event_fn on_event_;
    std::function<void()> on_end_;
    bool ended_ = false;
};

}  // namespace callisto::gateway::e2b
