#include "gateway/interpreter/execution_recorder.hpp"
#include "gateway/interpreter/output_budget.hpp"

#include <map>

#include <doctest/doctest.h>

using namespace callisto::gateway::interpreter;
using callisto::kernelproto::channel;
namespace kp = callisto::kernelproto;

namespace {

execution_request code(std::string text, bool keep_ansi = false) {
    execution_request r;
    r.code = std::move(text);
    r.keep_ansi = keep_ansi;
    return r;
}

// A kernel message answering request `parent`.
kp::message reply_to(const std::string& parent, std::string type, nlohmann::json content) {
    kp::message m = kp::make_message(std::move(type), content, "kernel-session");
    m.parent_msg_id = parent;
    m.parent_header = nlohmann::json{{"msg_id", parent}}.dump();
    return m;
}

struct recording {
    std::shared_ptr<execution> exec;
    std::map<std::string, std::string> files;  // what the writer was given
    execution_recorder recorder;

    explicit recording(recorder_limits limits = {}, bool can_write = true,
                       execution_request request = code("print(1)"),
                       std::size_t text_budget = 1 << 20)
        : exec(std::make_shared<execution>("e1", "c1", std::move(request), text_budget)),
          recorder(
              exec, "req-1", limits,
              [this, can_write](const std::string& name, const std::string& bytes) -> std::string {
                  if (!can_write) return {};
                  files[name] = bytes;
                  return "callisto-outputs/" + name;
              },
              "and the workdir is not writable") {
        exec->mark_started();
    }
    bool feed(channel ch, std::string type, nlohmann::json content,
              const std::string& parent = "req-1") {
        return recorder.on_message(ch, reply_to(parent, std::move(type), std::move(content)));
    }
    nlohmann::json record() const { return exec->to_json(); }
};

}  // namespace

TEST_CASE("the recorder collects streams and results, and is complete at reply and idle") {
    recording r;
    CHECK_FALSE(r.feed(channel::iopub, "status", {{"execution_state", "busy"}}));
    CHECK_FALSE(r.feed(channel::iopub, "stream", {{"name", "stdout"}, {"text", "hello\n"}}));
    CHECK_FALSE(r.feed(channel::iopub, "stream", {{"name", "stderr"}, {"text", "careful\n"}}));
    CHECK_FALSE(
        r.feed(channel::iopub, "execute_result",
               {{"data", {{"text/plain", "2"}}}, {"metadata", {}}, {"execution_count", 7}}));
    CHECK_FALSE(
        r.feed(channel::shell, "execute_reply", {{"status", "ok"}, {"execution_count", 7}}));
    CHECK(r.recorder.reply_status() == "ok");
    CHECK_FALSE(r.recorder.complete());
    CHECK(r.feed(channel::iopub, "status", {{"execution_state", "idle"}}));
    auto rec = r.record();
    CHECK(rec["stdout"] == "hello\n");
    CHECK(rec["stderr"] == "careful\n");
    CHECK(rec["results"].size() == 1);
    CHECK(rec["results"][0]["data"]["text/plain"] == "2");
    CHECK(rec["execution_count"] == 7);
}

TEST_CASE("the recorder ignores messages about other requests and non-object contents") {
    recording r;
    r.feed(channel::iopub, "stream", {{"name", "stdout"}, {"text", "not ours\n"}}, "req-other");
    r.feed(channel::shell, "execute_reply", {{"status", "ok"}}, "req-other");
    r.feed(channel::iopub, "status", {{"execution_state", "idle"}}, "req-other");
    CHECK_FALSE(r.recorder.complete());
    auto odd = reply_to("req-1", "stream", nlohmann::json::object());
    odd.content = "[1, 2]";
    CHECK_FALSE(r.recorder.on_message(channel::iopub, odd));
    CHECK(r.record()["stdout"] == "");
}

TEST_CASE("the recorder keeps the error with a plain traceback unless colours were asked for") {
    const nlohmann::json error = {{"ename", "ZeroDivisionError"},
                                  {"evalue", "division by zero"},
                                  {"traceback", {"\x1b[0;31mZeroDivisionError\x1b[0m", "line 1"}}};
    recording plain;
    plain.feed(channel::iopub, "error", error);
    plain.feed(channel::shell, "execute_reply", {{"status", "error"}});
    CHECK(plain.feed(channel::iopub, "status", {{"execution_state", "idle"}}));
    CHECK(plain.recorder.reply_status() == "error");
    auto e = plain.record()["error"];
    CHECK(e["name"] == "ZeroDivisionError");
    CHECK(e["value"] == "division by zero");
    CHECK(e["traceback"][0] == "ZeroDivisionError");

    recording raw({}, true, code("1/0", /*keep_ansi=*/true));
    raw.feed(channel::iopub, "error", error);
    CHECK(raw.record()["error"]["traceback"][0] == "\x1b[0;31mZeroDivisionError\x1b[0m");
}

TEST_CASE("the recorder sends a result over the caps to a file, decoding base64 images") {
    recording r(recorder_limits{16, 1 << 20});
    const std::string big(100, 'x');
    r.feed(channel::iopub, "display_data",
           {{"data", {{"text/plain", "small"}, {"text/html", big}, {"image/png", "aGVsbG8="}}},
            {"metadata", {}}});
    auto data = r.record()["results"][0]["data"];
    CHECK(data["text/plain"] == "small");
    CHECK(data["text/html"]["file"] == "callisto-outputs/e1-0.html");
    CHECK(data["text/html"]["bytes"] == 100);
    CHECK(r.files.at("e1-0.html") == big);
    // "aGVsbG8=" is 8 bytes, within the cap: inline. Past the budget it would be decoded.
    CHECK(data["image/png"] == "aGVsbG8=");
    CHECK(r.record()["truncated"]["results"].size() == 1);
}

TEST_CASE("the kernel's result descriptions are kept for E2B's executions only, within the caps") {
    const nlohmann::json display = {
        {"data",
         {{"text/plain", "<Figure>"},
          {"application/vnd.callisto.chart+json", {{"type", "line"}, {"elements", {1, 2}}}},
          {"application/vnd.callisto.dataframe+json",
           nlohmann::json::array({nlohmann::json::array({"a", {1, 2}})})}}},
        {"metadata", {}}};
    recording v1;
    v1.feed(channel::iopub, "display_data", display);
    CHECK(v1.record()["results"][0]["data"] == nlohmann::json({{"text/plain", "<Figure>"}}));

    auto e2b = code("plt.show()");
    e2b.keep_result_descriptions = true;
    recording kept({}, true, e2b);
    kept.feed(channel::iopub, "display_data", display);
    CHECK(kept.record()["results"][0]["data"] == display["data"]);

    // The same caps as any MIME value: over them, a file.
    recording capped(recorder_limits{20, 1 << 20}, true, e2b);
    capped.feed(channel::iopub, "display_data", display);
    auto data = capped.record()["results"][0]["data"];
    CHECK(data["application/vnd.callisto.chart+json"]["file"] == "callisto-outputs/e1-0.json");
    CHECK(data["application/vnd.callisto.dataframe+json"] ==
          display["data"]["application/vnd.callisto.dataframe+json"]);
}

TEST_CASE("the recorder bounds all inline results of an execution by the results budget") {
    recording r(recorder_limits{1000, 1500});
    const std::string png_b64(800, 'A');  // valid base64: 600 bytes of zeros
    for (int i = 0; i < 3; ++i)
        r.feed(channel::iopub, "display_data",
               {{"data", {{"image/png", png_b64}}}, {"metadata", {}}});
    auto results = r.record()["results"];
    REQUIRE(results.size() == 3);
    CHECK(results[0]["data"]["image/png"].is_string());
    CHECK(results[1]["data"]["image/png"]["file"] == "callisto-outputs/e1-1.png");
    CHECK(r.files.at("e1-1.png").size() == 600);  // decoded before writing
    CHECK(results[2]["data"]["image/png"]["file"] == "callisto-outputs/e1-2.png");
}

TEST_CASE("the recorder says why an oversized result could not become a file") {
    recording r(recorder_limits{4, 1 << 20}, /*can_write=*/false);
    r.feed(channel::iopub, "execute_result",
           {{"data", {{"text/plain", "too long"}}}, {"metadata", {}}});
    const std::string shown = r.record()["results"][0]["data"]["text/plain"];
    CHECK(shown.find("8 bytes dropped: over the result caps, and the workdir is not writable") !=
          std::string::npos);
}

TEST_CASE("the recorder's streams are cut at the execution's text budget, head and tail kept") {
    recording r({}, true, code("print(1)"), /*text_budget=*/10);
    const std::string all = "abcdefghijklmnopqrstuvwxyz";
    r.feed(channel::iopub, "stream", {{"name", "stdout"}, {"text", all}});
    r.feed(channel::iopub, "stream", {{"name", "stderr"}, {"text", "short\n"}});
    auto rec = r.record();
    CHECK(rec["truncated"]["stdout_bytes"] == 16);
    CHECK(rec["stdout"] == all.substr(0, 5) + output_budget::marker(16) + all.substr(21));
    CHECK(rec["truncated"]["stderr_bytes"] == 0);
    CHECK(rec["stderr"] == "short\n");
}

TEST_CASE("the recorder cuts an error's name, value and traceback to their caps, and says so") {
    recorder_limits limits;
    limits.text_bytes = 1000;
    limits.error_name_bytes = 100;
    recording r(limits);
    const std::string value = "VALUE-START" + std::string(40'000, 'v') + "VALUE-END";
    r.feed(
        channel::iopub, "error",
        {{"ename", "Name" + std::string(5000, 'n')},
         {"evalue", value},
         {"traceback",
          {"Traceback (most recent call last)", "  File <cell>, line 1", "ValueError: " + value}}});
    const auto rec = r.record();
    const auto& e = rec["error"];
    CHECK(e["name"].get<std::string>().size() <= 100);
    CHECK(e["name"].get<std::string>().starts_with("Name"));
    const std::string shown = e["value"];
    CHECK(shown.size() <= 1000);
    CHECK(shown.starts_with("VALUE-START"));
    CHECK(shown.ends_with("VALUE-END"));
    CHECK(shown.find("bytes truncated ...]") != std::string::npos);
    std::size_t traceback_bytes = 0;
    for (const auto& line : e["traceback"]) traceback_bytes += line.get<std::string>().size();
    CHECK(traceback_bytes <= 1000);
    CHECK(e["traceback"][0] == "Traceback (most recent call last)");
    CHECK(e["traceback"].back().get<std::string>().ends_with("VALUE-END"));
    // truncated.fields names each cut field and how much of it was left out.
    std::map<std::string, std::size_t> cut;
    for (const auto& f : rec["truncated"]["fields"]) cut[f["field"]] = f["bytes"];
    CHECK(cut.size() == 3);
    CHECK(cut.at("error.name") > 4900);
    CHECK(cut.at("error.value") > 39'000);
    CHECK(cut.at("error.traceback") > 39'000);
    // The events carry the same capped fields.
    CHECK(rec.dump().size() < 4000);
}

TEST_CASE("the recorder keeps an error that fits as it is, with nothing listed as cut") {
    recording r;
    r.feed(channel::iopub, "error",
           {{"ename", "KeyError"}, {"evalue", "'x'"}, {"traceback", {"KeyError: 'x'"}}});
    const auto rec = r.record();
    CHECK(rec["error"]["value"] == "'x'");
    CHECK(rec["truncated"]["fields"].empty());
}

TEST_CASE("the recorder tolerates an error whose fields are missing or not strings") {
    recording r;
    r.feed(channel::iopub, "error", {{"ename", 7}, {"traceback", {1, "line", nullptr}}});
    const auto e = r.record()["error"];
    CHECK(e["name"] == "");
    CHECK(e["value"] == "");
    CHECK(e["traceback"] == nlohmann::json::array({"line"}));
}

TEST_CASE("the recorder drops a display's metadata over its cap or the results budget") {
    recorder_limits limits;
    limits.metadata_bytes = 1000;
    limits.results_budget_bytes = 2500;
    recording r(limits);
    const nlohmann::json small = {{"image/png", {{"width", 10}, {"height", 20}}}};
    const nlohmann::json big = {{"junk", std::string(30'000, 'm')}};
    r.feed(channel::iopub, "display_data", {{"data", {{"text/plain", "a"}}}, {"metadata", small}});
    r.feed(channel::iopub, "display_data", {{"data", {{"text/plain", "b"}}}, {"metadata", big}});
    // Under the cap, but two of them find the budget spent.
    const nlohmann::json medium = {{"note", std::string(900, 'n')}};
    for (int i = 0; i < 4; ++i)
        r.feed(channel::iopub, "display_data",
               {{"data", {{"text/plain", "c"}}}, {"metadata", medium}});
    const auto rec = r.record();
    REQUIRE(rec["results"].size() == 6);
    CHECK(rec["results"][0]["metadata"] == small);
    CHECK(rec["results"][1]["metadata"] == nlohmann::json::object());
    CHECK(rec["results"][1]["data"]["text/plain"] == "b");  // the data stays
    CHECK(rec["results"][2]["metadata"] == medium);
    CHECK(rec["results"][3]["metadata"] == medium);
    CHECK(rec["results"][4]["metadata"] == nlohmann::json::object());
    std::vector<std::string> cut;
    for (const auto& f : rec["truncated"]["fields"]) cut.push_back(f["field"]);
    CHECK(cut == std::vector<std::string>{"results[1].metadata", "results[4].metadata",
                                          "results[5].metadata"});
    CHECK(rec["truncated"]["fields"][0]["bytes"] == big.dump().size());
}
