#pragma once
// envd's filesystem.Filesystem/WatchDir, its wire half: the request ({path, recursive}) and its
// bad forms, the inotify events a watch reads as envd's EventType names (fsnotify's mapping,
// which envd uses), and the WatchDirResponse messages of the stream, each in a Connect
// envelope: start {} first, then filesystem {name, type} per event, keepalive {} while quiet;
// and the polling watchers' messages (CreateWatcher takes WatchDir's request).
// Pure: unit-tested. directory_watch.hpp does the watching.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "gateway/e2b/e2b_errors.hpp"

namespace callisto::gateway::e2b {

struct watch_request {
    std::string path;  // workdir-relative, as resolve_envd_path gives it
    bool recursive = false;
};
// An entry's info in the events (includeEntry, envd 0.6.3) is refused (unimplemented).
std::optional<watch_request> parse_watch_dir(std::string_view message, connect_code& code,
                                             std::string& error);

// EVENT_TYPE_CREATE, _WRITE, _REMOVE, _RENAME, _CHMOD for an inotify mask (several when the
// mask holds several); none for the rest.
std::vector<std::string> event_types_of(std::uint32_t inotify_mask);

// One event as envd reports it (FilesystemEvent).
struct watch_event {
    std::string name;  // relative to the watched directory
    std::string type;  // envd's EventType name
};

// The polling watchers' requests (GetWatcherEvents, RemoveWatcher): {watcherId}, a string.
std::optional<std::string> parse_watcher_id(std::string_view message, connect_code& code,
                                            std::string& error);
// GetWatcherEvents' answer: {events: [{name, type}]}.
nlohmann::json watcher_events_message(const std::vector<watch_event>& events);

std::string watch_start_frame();
std::string watch_event_frame(std::string_view name, std::string_view type);
std::string watch_keepalive_frame();

}  // namespace callisto::gateway::e2b
