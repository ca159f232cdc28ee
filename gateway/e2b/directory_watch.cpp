#include "gateway/e2b/directory_watch.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

#include <boost/asio/post.hpp>

#include "common/directory_stream.hpp"

namespace callisto::gateway::e2b {

namespace {

constexpr std::uint32_t watched_events = IN_CREATE | IN_MOVED_TO | IN_MODIFY | IN_DELETE |
                                         IN_DELETE_SELF | IN_MOVED_FROM | IN_MOVE_SELF | IN_ATTRIB |
                                         IN_ONLYDIR;

envd_error refusal(connect_code code, int status, std::string message) {
    return envd_error{code, status, std::move(message)};
}

// The directory at `relative` under `workdir`, each component opened without following a link.
unique_fd open_directory(const std::filesystem::path& workdir, const std::string& relative,
                         std::optional<envd_error>& error) {
    unique_fd dir(::open(workdir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    std::size_t at = 0;
    while (dir && at < relative.size()) {
        const auto slash = relative.find('/', at);
        const std::string part =
            relative.substr(at, slash == std::string::npos ? slash : slash - at);
        at = slash == std::string::npos ? relative.size() : slash + 1;
        if (part.empty()) continue;
        dir.reset(
            ::openat(dir.get(), part.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    }
    if (!dir) {
        const std::string shown = envd_path_of(relative);
        error = errno == ENOENT
                    ? refusal(connect_code::not_found, 404, shown + " does not exist")
                    : refusal(connect_code::invalid_argument, 400, shown + " is not a directory");
    }
    return dir;
}

std::string joined(const std::string& dir, const std::string& name) {
    return dir.empty() ? name : dir + "/" + name;
}

}  // namespace

std::variant<std::shared_ptr<directory_watch>, envd_error> directory_watch::open(
    boost::asio::io_context& ioc, const std::filesystem::path& workdir,
    const watch_request& request) {
    unique_fd inotify(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
    if (!inotify)
        return refusal(connect_code::resource_exhausted, 429,
                       std::string("no watch: ") + std::strerror(errno));
    auto watch = std::make_shared<directory_watch>(ioc, workdir, request, std::move(inotify));
    if (auto e = watch->add("", 0)) return *e;
    return watch;
}

directory_watch::directory_watch(boost::asio::io_context& ioc, std::filesystem::path workdir,
                                 watch_request request, unique_fd inotify)
    : strand_(boost::asio::make_strand(ioc)),
      workdir_(std::move(workdir)),
      request_(std::move(request)),
      inotify_(strand_, inotify.release()) {}

std::optional<envd_error> directory_watch::add(const std::string& relative, int depth) {
    if (dirs_.size() >= max_watches || depth > max_depth) return std::nullopt;
    std::optional<envd_error> error;
    unique_fd dir = open_directory(workdir_, joined(request_.path, relative), error);
    if (!dir) return error;
    // Through the descriptor: what was opened, link-free, is what is watched.
    const std::string by_fd = "/proc/self/fd/" + std::to_string(dir.get());
    const int wd = ::inotify_add_watch(inotify_.native_handle(), by_fd.c_str(), watched_events);
    if (wd < 0)
        return refusal(connect_code::resource_exhausted, 429,
                       std::string("no watch: ") + std::strerror(errno));
    dirs_[wd] = {relative, depth};
    if (!request_.recursive) return std::nullopt;
    directory_stream listing(std::move(dir));
    while (const dirent* entry = listing.next()) {
        const std::string name = entry->d_name;
        if (entry->d_type == DT_DIR && name != "." && name != "..")
            add(joined(relative, name), depth + 1);
    }
    return std::nullopt;
}

void directory_watch::run(event_fn on_event, std::function<void()> on_end) {
    boost::asio::post(strand_, [self = shared_from_this(), on_event = std::move(on_event),
                                on_end = std::move(on_end)]() mutable {
        self->on_event_ = std::move(on_event);
        self->on_end_ = std::move(on_end);
        self->read();
    });
}

void directory_watch::stop() {
    boost::asio::post(strand_, [self = shared_from_this()] {
        self->ended_ = true;
        boost::system::error_code ignored;
        self->inotify_.close(ignored);
    });
}

void directory_watch::read() {
    inotify_.async_wait(
        boost::asio::posix::stream_descriptor::wait_read,
        [self = shared_from_this()](boost::system::error_code ec) {
            if (ec || self->ended_) return;
            alignas(inotify_event) std::array<char, 16 * 1024> buffer;
            const ssize_t n = ::read(self->inotify_.native_handle(), buffer.data(), buffer.size());
            for (ssize_t at = 0; n > 0 && at < n;) {
                const auto* e = reinterpret_cast<const inotify_event*>(buffer.data() + at);
                at += static_cast<ssize_t>(sizeof(inotify_event) + e->len);
                auto dir = self->dirs_.find(e->wd);
                if (dir == self->dirs_.end()) continue;
                const auto [relative, depth] = dir->second;
                const std::string name = e->len ? std::string(e->name) : std::string();
                const std::string shown = joined(relative, name);
                // The directory itself: its own removal or move is shown by its parent's
                // watch; the watched one's ends the stream.
                const bool self_event = (e->mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED));
                if (!self_event)
                    for (const auto& type : event_types_of(e->mask)) self->on_event_(shown, type);
                if ((e->mask & IN_IGNORED) || (relative.empty() && self_event)) {
                    if (relative.empty()) {
                        self->ended_ = true;
                        if (self->on_end_) std::exchange(self->on_end_, nullptr)();
                        return;
                    }
                    self->dirs_.erase(dir);
                    continue;
                }
                if (self->request_.recursive && (e->mask & IN_ISDIR) &&
                    (e->mask & (IN_CREATE | IN_MOVED_TO)))
                    self->add(shown, depth + 1);
            }
            self->read();
        });
}

}  // namespace callisto::gateway::e2b
