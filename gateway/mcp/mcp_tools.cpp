#include "gateway/mcp/mcp_tools.hpp"

#include <cmath>
#include <set>

#include "common/byte_size.hpp"
#include "common/encoding.hpp"
#include "gateway/http/router.hpp"
#include "gateway/interpreter/execution_request.hpp"
#include "gateway/interpreter/oversized_result.hpp"
#include "gateway/interpreter/snapshot_store.hpp"
#include "gateway/interpreter/workdir_files.hpp"

namespace callisto::gateway::mcp {

namespace {

const nlohmann::json path_schema = {
    {"type", "string"},
    {"description", "A path relative to the working directory, e.g. \"data/input.csv\"."}};

nlohmann::json object_schema(nlohmann::json properties, nlohmann::json required) {
    return {{"type", "object"},
            {"properties", std::move(properties)},
            {"required", std::move(required)},
            {"additionalProperties", false}};
}

// Unknown keys are refused: a misspelt "timeout" silently ignored would run without one.
bool only_known(const nlohmann::json& args, const std::set<std::string>& known,
                std::string& error) {
    for (auto& [key, value] : args.items())
        if (!known.count(key)) {
            error = "unknown argument \"" + key + "\"";
            return false;
        }
    return true;
}

bool required_string(const nlohmann::json& args, const char* key, std::string& out,
                     std::string& error) {
    if (!args.contains(key)) {
        error = std::string("missing required argument \"") + key + "\"";
        return false;
    }
    if (!args[key].is_string()) {
        error = std::string("\"") + key + "\" must be a string";
        return false;
    }
    out = args[key].get<std::string>();
    return true;
}

bool checked_path(const nlohmann::json& args, std::string& out, std::string& error) {
    if (!required_string(args, "path", out, error)) return false;
    if (auto bad = interpreter::check_relative_path(out)) {
        error = "\"path\": " + *bad;
        return false;
    }
    return true;
}

// "language", optional in every tool; false (with `error`) when present but not one of four.
bool optional_language(const nlohmann::json& args, tool_language& out, std::string& error) {
    if (!args.contains("language") || args["language"].is_null()) return true;
    if (args["language"].is_string())
        out = languages::parse_execution_language(args["language"].get<std::string>());
    if (!out) error = R"("language" must be )" + languages::language_list('"');
    return out.has_value();
}

nlohmann::json language_schema(std::string what) {
    return {{"type", "string"},
            {"enum", languages::language_names(languages::all_execution_languages())},
            {"default", "python"},
            {"description", std::move(what)}};
}

// "context_id" / "snapshot_id": required or not; false (with `error`) when present and not an
// id of that kind (a malformed one could never name anything).
bool context_id_arg(const nlohmann::json& args, bool required, std::string& out,
                    std::string& error) {
    if (!args.contains("context_id") || args["context_id"].is_null()) {
        if (required) error = "missing required argument \"context_id\"";
        return !required;
    }
    if (!required_string(args, "context_id", out, error)) return false;
    if (!is_valid_kernel_id(out)) {
        error =
            "\"context_id\" is not a context id (a UUID, as fork_context and "
            "restore_snapshot return)";
        return false;
    }
    return true;
}

bool snapshot_id_arg(const nlohmann::json& args, std::string& out, std::string& error) {
    if (!required_string(args, "snapshot_id", out, error)) return false;
    if (!interpreter::snapshot_store::valid_id(out)) {
        error =
            "\"snapshot_id\" is not a snapshot id (as snapshot_context and list_snapshots "
            "return)";
        return false;
    }
    return true;
}

const nlohmann::json context_id_schema = {
    {"type", "string"},
    {"description",
     "One of your contexts, by id (as fork_context or restore_snapshot return, or a /v1 "
     "context). Default: this session's own."}};

const nlohmann::json snapshot_id_schema = {
    {"type", "string"}, {"description", "A snapshot's id, as snapshot_context returns."}};

const char* files_language =
    "Whose working directory: \"python\" (the default; bash and sql see the same files) or "
    "\"r\" (the R kernel's own).";

}  // namespace

nlohmann::json tool_definitions(const tool_limits& limits) {
    const auto max_timeout = limits.max_timeout.count();
    nlohmann::json tools = nlohmann::json::array();
    tools.push_back(
        {{"name", "run_code"},
         {"title", "Run code"},
         {"description",
          "Runs code in a persistent, sandboxed Jupyter kernel. language \"python\" (the "
          "default, IPython): variables, imports and files persist between calls of this "
          "session; numpy, pandas and matplotlib are available (figures come back as PNG). "
          "\"bash\": a shell script in the same working directory. \"sql\": SQLite over the "
          "working directory, where each .csv/.tsv/.jsonl file is a table named after the file "
          "(sales.csv is sales) and callisto.db keeps tables you create. \"r\": R in a kernel of "
          "its own, with its own working directory (upload_file with language \"r\" puts files "
          "there). Returns stdout, stderr, the value of the last expression or the query's "
          "table, charts and, on an error, the traceback. There is no network."},
         {"inputSchema",
          object_schema(
              {{"code", {{"type", "string"}, {"description", "The code to run."}}},
               {"language", language_schema("The language of code (default \"python\").")},
               {"timeout_seconds",
                {{"type", "number"},
                 {"exclusiveMinimum", 0},
                 {"maximum", max_timeout},
                 {"description", "Time limit (default " +
                                     std::to_string(limits.default_timeout.count()) +
                                     "). At the limit the code is interrupted (state kept); if it "
                                     "does not stop, the kernel restarts (state lost)."}}},
               {"output_budget",
                {{"type", "integer"},
                 {"minimum", 256},
                 {"maximum", limits.max_output_budget},
                 {"description", "Bytes of stdout, and of stderr, kept (default " +
                                     std::to_string(limits.default_output_budget) +
                                     "): beyond it the first and last half are kept, with a "
                                     "marker saying how much was cut."}}},
               {"context_id",
                {{"type", "string"},
                 {"description",
                  "Run in one of your other contexts instead of this session's: an id that "
                  "fork_context or restore_snapshot returned (a paused one is resumed first). "
                  "Default: this session's context."}}}},
              {"code"})}});
    tools.push_back(
        {{"name", "upload_file"},
         {"title", "Upload a file"},
         {"description",
          "Writes a file into the working directory of run_code (parent directories are "
          "created, an existing file is replaced). Up to " +
              std::to_string(limits.max_upload_bytes) + " bytes."},
         {"inputSchema",
          object_schema({{"path", path_schema},
                         {"content", {{"type", "string"}, {"description", "The file's content."}}},
                         {"language", language_schema(files_language)},
                         {"context_id", context_id_schema},
                         {"encoding",
                          {{"type", "string"},
                           {"enum", {"text", "base64"}},
                           {"default", "text"},
                           {"description",
                            "\"text\" (UTF-8, the default) or \"base64\" for binary files."}}}},
                        {"path", "content"})}});
    tools.push_back(
        {{"name", "list_files"},
         {"title", "List files"},
         {"description",
          "Lists the files in the working directory of run_code, recursively, with sizes."},
         {"inputSchema", object_schema({{"include_hidden",
                                         {{"type", "boolean"},
                                          {"default", false},
                                          {"description",
                                           "Also list dot-files and dot-directories (the kernel's "
                                           ".cache, .ipython, .config)."}}},
                                        {"language", language_schema(files_language)},
                                        {"context_id", context_id_schema}},
                                       nlohmann::json::array())},
         {"annotations", {{"readOnlyHint", true}}}});
    tools.push_back({{"name", "read_file"},
                     {"title", "Read a file"},
                     {"description",
                      "Reads a file from the working directory of run_code: text files as "
                      "text, images as images, other binary files as a base64 resource."},
                     {"inputSchema", object_schema({{"path", path_schema},
                                                    {"language", language_schema(files_language)},
                                                    {"context_id", context_id_schema}},
                                                   {"path"})},
                     {"annotations", {{"readOnlyHint", true}}}});
    tools.push_back(
        {{"name", "restart_context"},
         {"title", "Restart a kernel"},
         {"description",
          "Restarts the kernel: every variable and import is lost, files in "
          "the working directory stay. Use it when the kernel is stuck or broken."},
         {"inputSchema",
          object_schema({{"language", language_schema("Which kernel: \"python\" (the default; "
                                                      "also bash's and sql's) or \"r\".")},
                         {"context_id", context_id_schema}},
                        nlohmann::json::array())},
         {"annotations", {{"destructiveHint", true}}}});
    const auto which_kernel = language_schema(
        "Which of this session's kernels, when context_id is not given: \"python\" (the "
        "default) or \"r\". Python and R contexts are snapshotted.");
    tools.push_back(
        {{"name", "snapshot_context"},
         {"title", "Snapshot a context"},
         {"description",
          "Saves a context's state (its variables, functions, classes and imports, and the files "
          "of its working directory) as a snapshot you can restore later with restore_snapshot, "
          "even after this session ends. What cannot be saved (open sockets, generators, "
          "threads) is listed by name and type. The context must be idle. Snapshots count "
          "against your snapshot quota: delete the ones you no longer need."},
         {"inputSchema",
          object_schema({{"context_id", context_id_schema}, {"language", which_kernel}},
                        nlohmann::json::array())}});
    tools.push_back(
        {{"name", "list_snapshots"},
         {"title", "List snapshots"},
         {"description", "Lists your snapshots: id, source context, size, time."},
         {"inputSchema", object_schema(nlohmann::json::object(), nlohmann::json::array())},
         {"annotations", {{"readOnlyHint", true}}}});
    tools.push_back(
        {{"name", "delete_snapshot"},
         {"title", "Delete a snapshot"},
         {"description", "Deletes one of your snapshots."},
         {"inputSchema", object_schema({{"snapshot_id", snapshot_id_schema}}, {"snapshot_id"})},
         {"annotations", {{"destructiveHint", true}}}});
    tools.push_back(
        {{"name", "restore_snapshot"},
         {"title", "Restore a snapshot"},
         {"description",
          "Restores one of your snapshots into a new context, in a fresh sandboxed kernel, and "
          "returns its id: run code there with run_code's context_id. The new context is yours, "
          "like one made over /v1: it outlives this session (delete it over /v1, or let it be "
          "culled or paused when idle)."},
         {"inputSchema", object_schema({{"snapshot_id", snapshot_id_schema}}, {"snapshot_id"})}});
    tools.push_back(
        {{"name", "fork_context"},
         {"title", "Fork a context"},
         {"description",
          "Copies a context's state and files into count new, independent contexts (each its "
          "own fresh kernel), to try several approaches at once; returns their ids, for "
          "run_code's context_id. All are made, or none. The context must be idle. The copies "
          "are yours, like contexts made over /v1, and outlive this session."},
         {"inputSchema", object_schema({{"count",
                                         {{"type", "integer"},
                                          {"minimum", 1},
                                          {"maximum", max_tool_forks},
                                          {"default", 1},
                                          {"description", "How many copies."}}},
                                        {"context_id", context_id_schema},
                                        {"language", which_kernel}},
                                       nlohmann::json::array())}});
    tools.push_back(
        {{"name", "pause_context"},
         {"title", "Pause a context"},
         {"description",
          "Pauses one of your contexts (made by fork_context or restore_snapshot, or over /v1): "
          "its state is saved and its kernel stopped, so it holds no memory; it keeps its id, "
          "and its next run_code (or resume_context) brings it back. This session's own "
          "contexts are not paused."},
         {"inputSchema",
          object_schema(
              {{"context_id", {{"type", "string"}, {"description", "The context to pause."}}}},
              {"context_id"})}});
    tools.push_back(
        {{"name", "resume_context"},
         {"title", "Resume a context"},
         {"description",
          "Brings a paused context of yours back into a fresh kernel, with its state and files, "
          "and says how long that took. A live context is left as it is."},
         {"inputSchema",
          object_schema(
              {{"context_id", {{"type", "string"}, {"description", "The context to resume."}}}},
              {"context_id"})}});
    return tools;
}

std::optional<tool_call> parse_tool_call(const nlohmann::json& params, const tool_limits& limits,
                                         std::string& error) {
    if (!params.is_object() || !params.contains("name") || !params["name"].is_string()) {
        error = "tools/call needs \"name\": the tool's name";
        return std::nullopt;
    }
    const std::string name = params["name"];
    nlohmann::json args = nlohmann::json::object();
    if (params.contains("arguments") && !params["arguments"].is_null()) {
        if (!params["arguments"].is_object()) {
            error = "\"arguments\" must be an object";
            return std::nullopt;
        }
        args = params["arguments"];
    }
    auto fail = [&](std::string why) {
        error = name + ": " + why;
        return std::nullopt;
    };

    if (name == "run_code") {
        if (!only_known(args,
                        {"code", "language", "timeout_seconds", "output_budget", "context_id"},
                        error))
            return fail(error);
        run_code_args a{{}, limits.default_timeout, {}, limits.default_output_budget, {}};
        if (!required_string(args, "code", a.code, error)) return fail(error);
        if (!context_id_arg(args, false, a.context_id, error)) return fail(error);
        if (!optional_language(args, a.language, error)) return fail(error);
        if (a.code.size() > limits.max_code_bytes)
            return fail("\"code\" is longer than " + std::to_string(limits.max_code_bytes) +
                        " bytes");
        if (auto why = interpreter::check_code(a.code, "\"code\"")) return fail(*why);
        if (args.contains("timeout_seconds")) {
            const auto& t = args["timeout_seconds"];
            if (!t.is_number()) return fail("\"timeout_seconds\" must be a number");
            const double secs = t.get<double>();
            if (!std::isfinite(secs) || secs <= 0 ||
                secs > static_cast<double>(limits.max_timeout.count()))
                return fail("\"timeout_seconds\" must be above 0 and at most " +
                            std::to_string(limits.max_timeout.count()));
            a.timeout =
                std::chrono::milliseconds(std::max<long long>(1, std::llround(secs * 1000)));
        }
        if (args.contains("output_budget")) {
            const auto& b = args["output_budget"];
            if (!b.is_number_integer() || b.get<std::int64_t>() < 256 ||
                b.get<std::uint64_t>() > limits.max_output_budget)
                return fail("\"output_budget\" must be a whole number of bytes from 256 to " +
                            std::to_string(limits.max_output_budget));
            a.output_budget = b.get<std::size_t>();
        }
        return a;
    }
    if (name == "upload_file") {
        if (!only_known(args, {"path", "content", "encoding", "language", "context_id"}, error))
            return fail(error);
        upload_file_args a;
        if (!checked_path(args, a.path, error)) return fail(error);
        if (!optional_language(args, a.language, error)) return fail(error);
        if (!context_id_arg(args, false, a.context_id, error)) return fail(error);
        if (!required_string(args, "content", a.bytes, error)) return fail(error);
        std::string encoding = "text";
        if (args.contains("encoding")) {
            if (!args["encoding"].is_string())
                return fail("\"encoding\" must be \"text\" or \"base64\"");
            encoding = args["encoding"].get<std::string>();
        }
        if (encoding == "base64") {
            auto decoded = decode_base64(a.bytes);
            if (!decoded) return fail("\"content\" is not valid base64");
            a.bytes = std::move(*decoded);
        } else if (encoding != "text") {
            return fail("\"encoding\" must be \"text\" or \"base64\"");
        }
        if (a.bytes.size() > limits.max_upload_bytes)
            return fail("the file is larger than " + describe_bytes(limits.max_upload_bytes) +
                        " (--upload-limit, at most 16MiB here); upload large files with PUT "
                        "/v1/contexts/{id}/files/{path}");
        return a;
    }
    if (name == "list_files") {
        if (!only_known(args, {"include_hidden", "language", "context_id"}, error))
            return fail(error);
        list_files_args a;
        if (!optional_language(args, a.language, error)) return fail(error);
        if (!context_id_arg(args, false, a.context_id, error)) return fail(error);
        if (args.contains("include_hidden")) {
            if (!args["include_hidden"].is_boolean())
                return fail("\"include_hidden\" must be true or false");
            a.include_hidden = args["include_hidden"].get<bool>();
        }
        return a;
    }
    if (name == "read_file") {
        if (!only_known(args, {"path", "language", "context_id"}, error)) return fail(error);
        read_file_args a;
        if (!checked_path(args, a.path, error)) return fail(error);
        if (!optional_language(args, a.language, error)) return fail(error);
        if (!context_id_arg(args, false, a.context_id, error)) return fail(error);
        return a;
    }
    if (name == "restart_context") {
        if (!only_known(args, {"language", "context_id"}, error)) return fail(error);
        restart_context_args a;
        if (!optional_language(args, a.language, error)) return fail(error);
        if (!context_id_arg(args, false, a.context_id, error)) return fail(error);
        return a;
    }
    if (name == "snapshot_context") {
        if (!only_known(args, {"context_id", "language"}, error)) return fail(error);
        snapshot_context_args a;
        if (!context_id_arg(args, false, a.context_id, error)) return fail(error);
        if (!optional_language(args, a.language, error)) return fail(error);
        return a;
    }
    if (name == "list_snapshots") {
        if (!only_known(args, {}, error)) return fail(error);
        return list_snapshots_args{};
    }
    if (name == "delete_snapshot" || name == "restore_snapshot") {
        if (!only_known(args, {"snapshot_id"}, error)) return fail(error);
        std::string id;
        if (!snapshot_id_arg(args, id, error)) return fail(error);
        if (name == "delete_snapshot") return delete_snapshot_args{id};
        return restore_snapshot_args{id};
    }
    if (name == "fork_context") {
        if (!only_known(args, {"count", "context_id", "language"}, error)) return fail(error);
        fork_context_args a;
        if (!context_id_arg(args, false, a.context_id, error)) return fail(error);
        if (!optional_language(args, a.language, error)) return fail(error);
        if (args.contains("count")) {
            const auto& n = args["count"];
            if (!n.is_number_integer() || n.get<std::int64_t>() < 1 ||
                n.get<std::int64_t>() > static_cast<std::int64_t>(max_tool_forks))
                return fail("\"count\" must be a whole number from 1 to " +
                            std::to_string(max_tool_forks));
            a.count = n.get<std::size_t>();
        }
        return a;
    }
    if (name == "pause_context" || name == "resume_context") {
        if (!only_known(args, {"context_id"}, error)) return fail(error);
        std::string id;
        if (!context_id_arg(args, true, id, error)) return fail(error);
        if (name == "pause_context") return pause_context_args{id};
        return resume_context_args{id};
    }
    error = "unknown tool \"" + name + "\"; tools/list names the tools";
    return std::nullopt;
}

}  // namespace callisto::gateway::mcp
