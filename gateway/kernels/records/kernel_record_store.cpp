#include "gateway/kernels/records/kernel_record_store.hpp"

#include <csignal>
#include <stdexcept>

#include "launcher/process/process_identity.hpp"
#include "launcher/process/process_kill_list.hpp"

namespace callisto::gateway::kernels {

void kernel_record_store::kill_recorded_process(const kernel_record& record) {
    launcher::process_kill_list kill;
    kill.kill_if(record.pid, [&](pid_t pid) {
        if (!still_running(record).empty()) return false;
        ::kill(-pid, SIGKILL);
        return true;
    });
    kill.wait(std::chrono::seconds(2));
}

std::string kernel_record_store::still_running(const kernel_record& record) {
    const auto ticks = launcher::process_start_ticks(record.pid);
    if (!ticks) return "pid " + std::to_string(record.pid) + " has exited";
    if (*ticks != record.start_ticks)
        return "pid " + std::to_string(record.pid) + " is another process now";
    if (record.uid && launcher::process_real_uid(record.pid) != record.uid)
        return "pid " + std::to_string(record.pid) + " no longer runs as uid " +
               std::to_string(*record.uid);
    return {};
}

}  // namespace callisto::gateway::kernels
