//! The typed view of the merged settings: every key of Pi's `docs/settings.md`, with Pi's
//! defaults (`settings-defaults.js`) and Pi's leniency. Pi does not validate settings files; each
//! getter takes the value when it has the expected shape and otherwise falls back to the default,
//! so that is what [`Settings::from_layers`] does too. The few values Pi throws on when they are
//! used (timeouts, compaction token counts) become warnings here, with Pi's error text, and the
//! default applies.

use super::file::js_string;
use super::merge::resolve_default_tools;
use pi_protocol::{QueueMode, ThinkingLevel};
use serde_json::{Map, Value};

/// Pi's default HTTP idle timeout.
pub const DEFAULT_HTTP_IDLE_TIMEOUT_MS: u64 = 300_000;

macro_rules! string_enum {
    ($(#[$m:meta])* $name:ident { $($variant:ident = $text:literal),+ $(,)? } default $default:ident) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum $name { $($variant,)+ }
        impl $name {
            /// The value of a setting: a known string, else the default.
            fn parse(v: Option<&Value>) -> $name {
                match v.and_then(Value::as_str) {
                    $(Some($text) => $name::$variant,)+
                    _ => $name::$default,
                }
            }
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text,)+ }
            }
        }
    };
}

string_enum!(
    /// `cacheWarming` (read from the agent-dir settings only: warming costs money).
    CacheWarming { Off = "off", Streaming = "streaming", Idle = "idle" } default Idle
);
string_enum!(
    /// `doubleEscapeAction`.
    DoubleEscapeAction { Tree = "tree", Fork = "fork", None = "none" } default Tree
);
string_enum!(
    /// `treeFilterMode`.
    TreeFilterMode { Default = "default", NoTools = "no-tools", UserOnly = "user-only", LabeledOnly = "labeled-only", All = "all" } default Default
);
string_enum!(
    /// `defaultProjectTrust` (agent-dir settings only).
    DefaultProjectTrust { Ask = "ask", Always = "always", Never = "never" } default Ask
);
string_enum!(
    /// `codemode.mode`.
    CodemodeMode { On = "on", Only = "only" } default On
);
string_enum!(
    /// `sessionShareDestination`.
    ShareDestination { Auto = "auto", Gist = "gist", Radius = "radius" } default Auto
);
string_enum!(
    /// `tuiMode`.
    TuiMode { Regular = "regular", Fullscreen = "fullscreen" } default Fullscreen
);
string_enum!(
    /// `fullscreenExitOutput`.
    FullscreenExitOutput { Transcript = "transcript", ResumeHint = "resume-hint" } default Transcript
);
string_enum!(
    /// `fullscreenScrollbar`.
    FullscreenScrollbar { Auto = "auto", Always = "always", Hidden = "hidden" } default Auto
);
string_enum!(
    /// `markdown.mermaid`.
    MermaidMode { Off = "off", Final = "final", Streaming = "streaming" } default Streaming
);
string_enum!(
    /// `transport`.
    Transport { Auto = "auto", Sse = "sse", Websocket = "websocket", WebsocketCached = "websocket-cached" } default Auto
);

/// `quietStartup`: `false`, `true` or `"header"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuietStartup {
    Off,
    All,
    Header,
}

/// `terminal.images`: detection (`auto`), a forced protocol, or off (`false`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageProtocol {
    Auto,
    Kitty,
    Iterm2,
    Off,
}

/// `fullscreenWheelScrollLines`: `"auto"` or a line count clamped to 1..=100.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WheelScroll {
    Auto,
    Lines(u32),
}

/// `thinkingBudgets`: token budgets per level (absent members use the built-in budgets).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ThinkingBudgets {
    pub minimal: Option<f64>,
    pub low: Option<f64>,
    pub medium: Option<f64>,
    pub high: Option<f64>,
}

/// `compaction`, resolved for one model (see [`Settings::compaction_for`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompactionSettings {
    pub enabled: bool,
    pub reserve_tokens: u64,
    pub keep_recent_tokens: u64,
}

/// `branchSummary`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BranchSummarySettings {
    pub reserve_tokens: f64,
    pub skip_prompt: bool,
}

/// `retry` (agent-level retry) and `retry.provider` (SDK-level retry).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetrySettings {
    pub enabled: bool,
    pub max_retries: f64,
    pub base_delay_ms: f64,
    pub max_agent_delay_ms: f64,
    pub provider_timeout_ms: Option<f64>,
    pub provider_max_retries: Option<f64>,
    pub provider_max_retry_delay_ms: f64,
}

/// `terminal`. `clear_on_shrink` is `None` when unset (then `PI_CLEAR_ON_SHRINK=1` decides).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TerminalSettings {
    pub show_images: bool,
    pub image_width_cells: u32,
    pub clear_on_shrink: Option<bool>,
    pub show_terminal_progress: bool,
    pub hyperlinks: Option<bool>,
    pub images: ImageProtocol,
    pub true_color: Option<bool>,
}

/// Every setting, merged (project over agent dir) and defaulted.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    pub default_provider: Option<String>,
    pub default_model: Option<String>,
    pub default_thinking_level: Option<ThinkingLevel>,
    /// `modelThinkingLevels`, keyed by `provider/modelId`, in file order.
    pub model_thinking_levels: Vec<(String, ThinkingLevel)>,
    pub thinking_budgets: Option<ThinkingBudgets>,
    pub enabled_models: Option<Vec<String>>,
    pub hide_thinking_block: bool,
    pub show_cache_miss_notices: bool,
    pub cache_warming: CacheWarming,
    pub steering_mode: QueueMode,
    pub follow_up_mode: QueueMode,
    /// `externalEditor` when non-blank (`$VISUAL`, `$EDITOR`, then a platform default apply after).
    pub external_editor: Option<String>,
    pub double_escape_action: DoubleEscapeAction,
    pub tree_filter_mode: TreeFilterMode,
    pub default_project_trust: DefaultProjectTrust,
    /// `defaultTools` resolved to tool names; `None` when no layer sets it.
    pub default_tools: Option<Vec<String>>,
    pub codemode_mode: CodemodeMode,
    pub codemode_inline_budget: f64,
    /// `sessionDir` with `~` expanded (relative paths resolve from the cwd).
    pub session_dir: Option<String>,
    pub session_share_destination: ShareDestination,
    pub branch_summary: BranchSummarySettings,
    pub theme: Option<String>,
    pub quiet_startup: QuietStartup,
    pub tui_mode: TuiMode,
    pub fullscreen_exit_output: FullscreenExitOutput,
    pub fullscreen_scrollbar: FullscreenScrollbar,
    pub fullscreen_copy_on_select: bool,
    pub fullscreen_wheel_scroll_lines: WheelScroll,
    pub editor_padding_x: f64,
    pub output_pad: u8,
    pub autocomplete_max_visible: f64,
    /// `None` when unset (then `PI_HARDWARE_CURSOR=1` decides).
    pub show_hardware_cursor: Option<bool>,
    pub terminal: TerminalSettings,
    pub image_auto_resize: bool,
    pub block_images: bool,
    pub markdown_code_block_indent: String,
    pub markdown_mermaid: MermaidMode,
    pub transport: Transport,
    /// Agent-dir settings only.
    pub http_proxy: Option<String>,
    /// 0 disables the timeout.
    pub http_idle_timeout_ms: u64,
    /// `None`: the provider default; 0 disables.
    pub websocket_connect_timeout_ms: Option<u64>,
    pub retry: RetrySettings,
    /// `shellPath` with `~` expanded.
    pub shell_path: Option<String>,
    pub shell_command_prefix: Option<String>,
    pub npm_command: Option<Vec<String>>,
    /// Agent-dir settings only.
    pub self_update_command: Option<Vec<String>>,
    /// `packages` entries as written (strings or filter objects).
    pub packages: Vec<Value>,
    pub extensions: Vec<String>,
    pub skills: Vec<String>,
    pub prompts: Vec<String>,
    pub themes: Vec<String>,
    pub enable_skill_commands: bool,
    pub collapse_changelog: bool,
    pub enable_install_telemetry: bool,
    pub enable_analytics: bool,
    pub tracking_id: Option<String>,
    pub warn_anthropic_extra_usage: bool,
    pub last_changelog_version: Option<String>,
    /// `toolApprovals` (an addition, unknown to Pi): merged, and the agent-dir layer alone
    /// (a project's settings may tighten the user's rules, never loosen them).
    pub tool_approvals: Option<Value>,
    pub tool_approvals_user: Option<Value>,
    /// Warnings for values Pi would throw on when using them (`Invalid <key> setting: ...`).
    pub warnings: Vec<String>,
    compaction: Option<Value>,
}

fn at<'a>(m: &'a Map<String, Value>, path: &[&str]) -> Option<&'a Value> {
    let (first, rest) = path.split_first()?;
    let mut v = m.get(*first)?;
    for key in rest {
        v = v.as_object()?.get(*key)?;
    }
    Some(v)
}

fn string(m: &Map<String, Value>, path: &[&str]) -> Option<String> {
    at(m, path).and_then(Value::as_str).map(str::to_string)
}

fn boolean(m: &Map<String, Value>, path: &[&str], default: bool) -> bool {
    at(m, path).and_then(Value::as_bool).unwrap_or(default)
}

fn number(m: &Map<String, Value>, path: &[&str], default: f64) -> f64 {
    at(m, path).and_then(Value::as_f64).unwrap_or(default)
}

fn strings(m: &Map<String, Value>, key: &str) -> Option<Vec<String>> {
    match m.get(key)? {
        Value::Array(items) => Some(
            items
                .iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect(),
        ),
        _ => None,
    }
}

fn queue_mode(v: Option<&Value>) -> QueueMode {
    match v.and_then(Value::as_str) {
        Some("all") => QueueMode::All,
        _ => QueueMode::OneAtATime,
    }
}

fn thinking_level(v: &Value) -> Option<ThinkingLevel> {
    serde_json::from_value(v.clone()).ok()
}

/// `parseHttpIdleTimeoutMs`: a non-negative number (floored), `"disabled"` (0), a numeric string.
fn parse_timeout(v: &Value) -> Option<u64> {
    match v {
        Value::String(s) => {
            let t = pi_js::trim(s);
            if t.eq_ignore_ascii_case("disabled") {
                Some(0)
            } else if t.is_empty() {
                None
            } else {
                t.parse::<f64>()
                    .ok()
                    .and_then(|n| parse_timeout(&Value::from(n)))
            }
        }
        Value::Number(n) => n
            .as_f64()
            .filter(|f| f.is_finite() && *f >= 0.0)
            .map(|f| f.floor() as u64),
        _ => None,
    }
}

fn timeout(
    m: &Map<String, Value>,
    key: &str,
    default: Option<u64>,
    warnings: &mut Vec<String>,
) -> Option<u64> {
    match m.get(key) {
        None => default,
        Some(v) => parse_timeout(v).or_else(|| {
            warnings.push(format!("Invalid {key} setting: {}", js_string(v)));
            default
        }),
    }
}

fn expand_tilde(s: String) -> String {
    super::paths::normalize_path(&s, &super::paths::home_dir())
}

impl Settings {
    /// The typed settings of `merged` (project over agent dir); `global` is the agent-dir layer
    /// alone, for the settings Pi reads only from there.
    pub fn from_layers(global: &Map<String, Value>, merged: &Map<String, Value>) -> Settings {
        let m = merged;
        let mut warnings = Vec::new();
        let http_idle_timeout_ms = timeout(
            m,
            "httpIdleTimeoutMs",
            Some(DEFAULT_HTTP_IDLE_TIMEOUT_MS),
            &mut warnings,
        )
        .unwrap_or(DEFAULT_HTTP_IDLE_TIMEOUT_MS);
        let websocket_connect_timeout_ms =
            timeout(m, "websocketConnectTimeoutMs", None, &mut warnings);
        Settings {
            default_provider: string(m, &["defaultProvider"]),
            default_model: string(m, &["defaultModel"]),
            default_thinking_level: m.get("defaultThinkingLevel").and_then(thinking_level),
            model_thinking_levels: match m.get("modelThinkingLevels") {
                Some(Value::Object(levels)) => levels
                    .iter()
                    .filter_map(|(k, v)| thinking_level(v).map(|l| (k.clone(), l)))
                    .collect(),
                _ => Vec::new(),
            },
            thinking_budgets: m
                .get("thinkingBudgets")
                .and_then(Value::as_object)
                .map(|b| {
                    let f = |k: &str| b.get(k).and_then(Value::as_f64);
                    ThinkingBudgets {
                        minimal: f("minimal"),
                        low: f("low"),
                        medium: f("medium"),
                        high: f("high"),
                    }
                }),
            enabled_models: strings(m, "enabledModels"),
            hide_thinking_block: boolean(m, &["hideThinkingBlock"], false),
            show_cache_miss_notices: boolean(m, &["showCacheMissNotices"], false),
            cache_warming: CacheWarming::parse(global.get("cacheWarming")),
            steering_mode: queue_mode(m.get("steeringMode")),
            follow_up_mode: queue_mode(m.get("followUpMode")),
            external_editor: string(m, &["externalEditor"]).filter(|s| !pi_js::trim(s).is_empty()),
            double_escape_action: DoubleEscapeAction::parse(m.get("doubleEscapeAction")),
            tree_filter_mode: TreeFilterMode::parse(m.get("treeFilterMode")),
            default_project_trust: DefaultProjectTrust::parse(global.get("defaultProjectTrust")),
            default_tools: m.get("defaultTools").map(|v| {
                let entries: Vec<String> = match v {
                    Value::Array(items) => items
                        .iter()
                        .filter_map(|e| e.as_str().map(str::to_string))
                        .collect(),
                    _ => Vec::new(),
                };
                resolve_default_tools(&entries)
            }),
            codemode_mode: CodemodeMode::parse(at(m, &["codemode", "mode"])),
            codemode_inline_budget: number(m, &["codemode", "inlineBudget"], 3000.0),
            session_dir: string(m, &["sessionDir"])
                .filter(|s| !s.is_empty())
                .map(expand_tilde),
            session_share_destination: ShareDestination::parse(m.get("sessionShareDestination")),
            branch_summary: BranchSummarySettings {
                reserve_tokens: number(m, &["branchSummary", "reserveTokens"], 16384.0),
                skip_prompt: boolean(m, &["branchSummary", "skipPrompt"], false),
            },
            theme: string(m, &["theme"]),
            quiet_startup: match m.get("quietStartup") {
                Some(Value::Bool(true)) => QuietStartup::All,
                Some(Value::String(s)) if s == "header" => QuietStartup::Header,
                _ => QuietStartup::Off,
            },
            tui_mode: TuiMode::parse(m.get("tuiMode")),
            fullscreen_exit_output: FullscreenExitOutput::parse(m.get("fullscreenExitOutput")),
            fullscreen_scrollbar: FullscreenScrollbar::parse(m.get("fullscreenScrollbar")),
            fullscreen_copy_on_select: boolean(m, &["fullscreenCopyOnSelect"], true),
            fullscreen_wheel_scroll_lines: match m
                .get("fullscreenWheelScrollLines")
                .and_then(Value::as_f64)
            {
                Some(n) if n.is_finite() => WheelScroll::Lines(n.floor().clamp(1.0, 100.0) as u32),
                _ => WheelScroll::Auto,
            },
            editor_padding_x: number(m, &["editorPaddingX"], 0.0),
            output_pad: if m.get("outputPad").and_then(Value::as_f64) == Some(0.0) {
                0
            } else {
                1
            },
            autocomplete_max_visible: number(m, &["autocompleteMaxVisible"], 5.0),
            show_hardware_cursor: at(m, &["showHardwareCursor"]).and_then(Value::as_bool),
            terminal: TerminalSettings {
                show_images: boolean(m, &["terminal", "showImages"], true),
                image_width_cells: match at(m, &["terminal", "imageWidthCells"])
                    .and_then(Value::as_f64)
                {
                    Some(w) if w.is_finite() => w.floor().max(1.0) as u32,
                    _ => 60,
                },
                clear_on_shrink: at(m, &["terminal", "clearOnShrink"]).and_then(Value::as_bool),
                show_terminal_progress: boolean(m, &["terminal", "showTerminalProgress"], false),
                hyperlinks: at(m, &["terminal", "hyperlinks"]).and_then(Value::as_bool),
                images: match at(m, &["terminal", "images"]) {
                    Some(Value::String(s)) if s == "kitty" => ImageProtocol::Kitty,
                    Some(Value::String(s)) if s == "iterm2" => ImageProtocol::Iterm2,
                    Some(Value::Bool(false)) => ImageProtocol::Off,
                    _ => ImageProtocol::Auto,
                },
                true_color: at(m, &["terminal", "trueColor"]).and_then(Value::as_bool),
            },
            image_auto_resize: boolean(m, &["images", "autoResize"], true),
            block_images: boolean(m, &["images", "blockImages"], false),
            markdown_code_block_indent: string(m, &["markdown", "codeBlockIndent"])
                .unwrap_or_else(|| "  ".into()),
            markdown_mermaid: MermaidMode::parse(at(m, &["markdown", "mermaid"])),
            transport: Transport::parse(m.get("transport")),
            http_proxy: string(global, &["httpProxy"]),
            http_idle_timeout_ms,
            websocket_connect_timeout_ms,
            retry: RetrySettings {
                enabled: boolean(m, &["retry", "enabled"], true),
                max_retries: number(m, &["retry", "maxRetries"], 3.0),
                base_delay_ms: number(m, &["retry", "baseDelayMs"], 2000.0),
                max_agent_delay_ms: number(m, &["retry", "maxAgentDelayMs"], 60_000.0),
                provider_timeout_ms: at(m, &["retry", "provider", "timeoutMs"])
                    .and_then(Value::as_f64),
                provider_max_retries: at(m, &["retry", "provider", "maxRetries"])
                    .and_then(Value::as_f64),
                provider_max_retry_delay_ms: number(
                    m,
                    &["retry", "provider", "maxRetryDelayMs"],
                    60_000.0,
                ),
            },
            shell_path: string(m, &["shellPath"])
                .filter(|s| !s.is_empty())
                .map(expand_tilde),
            shell_command_prefix: string(m, &["shellCommandPrefix"]),
            npm_command: strings(m, "npmCommand"),
            self_update_command: strings(global, "selfUpdateCommand"),
            packages: match m.get("packages") {
                Some(Value::Array(items)) => items.clone(),
                _ => Vec::new(),
            },
            extensions: strings(m, "extensions").unwrap_or_default(),
            skills: strings(m, "skills").unwrap_or_default(),
            prompts: strings(m, "prompts").unwrap_or_default(),
            themes: strings(m, "themes").unwrap_or_default(),
            enable_skill_commands: boolean(m, &["enableSkillCommands"], true),
            collapse_changelog: boolean(m, &["collapseChangelog"], false),
            enable_install_telemetry: boolean(m, &["enableInstallTelemetry"], true),
            enable_analytics: boolean(m, &["enableAnalytics"], false),
            tracking_id: string(m, &["trackingId"]),
            warn_anthropic_extra_usage: boolean(m, &["warnings", "anthropicExtraUsage"], true),
            last_changelog_version: string(m, &["lastChangelogVersion"]),
            tool_approvals: m.get("toolApprovals").cloned(),
            tool_approvals_user: global.get("toolApprovals").cloned(),
            warnings,
            compaction: m.get("compaction").cloned(),
        }
    }

    /// `compaction.enabled`.
    pub fn compaction_enabled(&self) -> bool {
        self.compaction
            .as_ref()
            .and_then(|c| c.get("enabled"))
            .and_then(Value::as_bool)
            .unwrap_or(true)
    }

    /// The compaction settings for a model (`provider/modelId` looks up `compaction.modelOverrides`;
    /// `None` for no model). Each token value comes from the model override, then the plain
    /// setting, then the default. A value that is not a non-negative safe integer is reported
    /// with Pi's error text and skipped.
    pub fn compaction_for(&self, model_key: Option<&str>) -> (CompactionSettings, Vec<String>) {
        let mut warnings = Vec::new();
        let c = self.compaction.as_ref();
        let mut token = |field: &str, default: u64| -> u64 {
            let ordinary = c.and_then(|c| c.get(field));
            let ordinary = match ordinary {
                None => None,
                Some(v) => safe_int(v).or_else(|| {
                    warnings.push(format!(
                        "Invalid compaction.{field} setting: {}. Expected a non-negative safe integer.",
                        js_string(v)
                    ));
                    None
                }),
            };
            let entry = model_key.and_then(|k| {
                let e = c?.get("modelOverrides")?.as_object()?.get(k)?;
                Some((k, e))
            });
            let override_value = match entry {
                None => None,
                Some((k, Value::Object(o))) => match o.get(field) {
                    None => None,
                    Some(v) => safe_int(v).or_else(|| {
                        warnings.push(format!(
                            "Invalid compaction.modelOverrides[\"{k}\"].{field} setting: {}. Expected a non-negative safe integer.",
                            js_string(v)
                        ));
                        None
                    }),
                },
                Some((k, other)) => {
                    warnings.push(format!(
                        "Invalid compaction.modelOverrides[\"{k}\"] setting: {}. Expected an object.",
                        js_string(other)
                    ));
                    None
                }
            };
            override_value.or(ordinary).unwrap_or(default)
        };
        let reserve_tokens = token("reserveTokens", 16384);
        let keep_recent_tokens = token("keepRecentTokens", 20000);
        (
            CompactionSettings {
                enabled: self.compaction_enabled(),
                reserve_tokens,
                keep_recent_tokens,
            },
            warnings,
        )
    }

    /// The thinking level configured for `provider/modelId`, if any.
    pub fn model_thinking_level(&self, provider: &str, model_id: &str) -> Option<ThinkingLevel> {
        let key = format!("{provider}/{model_id}");
        self.model_thinking_levels
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, l)| *l)
    }
}

/// `Number.isSafeInteger(v) && v >= 0`.
fn safe_int(v: &Value) -> Option<u64> {
    const MAX_SAFE: f64 = 9_007_199_254_740_991.0;
    let f = v.as_f64()?;
    (f.fract() == 0.0 && (0.0..=MAX_SAFE).contains(&f)).then_some(f as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn settings(v: Value) -> Settings {
        let m = v.as_object().cloned().unwrap_or_default();
        Settings::from_layers(&m, &m)
    }

    #[test]
    fn defaults_match_pi() {
        let s = settings(json!({}));
        assert_eq!(s.steering_mode, QueueMode::OneAtATime);
        assert_eq!(s.follow_up_mode, QueueMode::OneAtATime);
        assert_eq!(s.default_thinking_level, None);
        assert_eq!(
            s.compaction_for(None).0,
            CompactionSettings {
                enabled: true,
                reserve_tokens: 16384,
                keep_recent_tokens: 20000
            }
        );
        assert_eq!(
            s.retry,
            RetrySettings {
                enabled: true,
                max_retries: 3.0,
                base_delay_ms: 2000.0,
                max_agent_delay_ms: 60000.0,
                provider_timeout_ms: None,
                provider_max_retries: None,
                provider_max_retry_delay_ms: 60000.0,
            }
        );
        assert!(s.image_auto_resize && !s.block_images);
        assert_eq!(s.default_tools, None);
        assert_eq!(s.http_idle_timeout_ms, DEFAULT_HTTP_IDLE_TIMEOUT_MS);
        assert_eq!(s.default_project_trust, DefaultProjectTrust::Ask);
        assert_eq!(s.cache_warming, CacheWarming::Idle);
        assert_eq!(s.tui_mode.as_str(), "fullscreen");
        assert!(s.enable_skill_commands);
        assert!(s.warnings.is_empty());
    }

    #[test]
    fn values_of_the_wrong_shape_fall_back() {
        let s = settings(
            json!({"steeringMode": 5, "compaction": "yes", "skills": "x",
            "retry": {"enabled": "no"}, "defaultThinkingLevel": "huge", "quietStartup": "header"}),
        );
        assert_eq!(s.steering_mode, QueueMode::OneAtATime);
        assert!(s.compaction_enabled());
        assert!(s.skills.is_empty());
        assert!(s.retry.enabled);
        assert_eq!(s.default_thinking_level, None);
        assert_eq!(s.quiet_startup, QuietStartup::Header);
    }

    #[test]
    fn typed_values() {
        let s = settings(
            json!({"steeringMode": "all", "defaultThinkingLevel": "high",
            "modelThinkingLevels": {"p/m": "low", "p/x": "bogus"},
            "defaultTools": ["+grep"], "httpIdleTimeoutMs": " disabled ", "websocketConnectTimeoutMs": "1500.7",
            "images": {"blockImages": true}, "shellPath": "~/bin/bash",
            "compaction": {"enabled": false, "reserveTokens": 100, "modelOverrides": {"p/m": {"keepRecentTokens": 5}}}}),
        );
        assert_eq!(s.steering_mode, QueueMode::All);
        assert_eq!(s.default_thinking_level, Some(ThinkingLevel::High));
        assert_eq!(s.model_thinking_level("p", "m"), Some(ThinkingLevel::Low));
        assert_eq!(s.model_thinking_level("p", "x"), None);
        assert_eq!(
            s.default_tools,
            Some(vec![
                "read".into(),
                "bash".into(),
                "edit".into(),
                "write".into(),
                "grep".into()
            ])
        );
        assert_eq!(s.http_idle_timeout_ms, 0);
        assert_eq!(s.websocket_connect_timeout_ms, Some(1500));
        assert!(s.block_images);
        assert!(
            s.shell_path
                .clone()
                .is_some_and(|p| p.ends_with("/bin/bash") && !p.starts_with('~'))
        );
        assert_eq!(
            s.compaction_for(Some("p/m")).0,
            CompactionSettings {
                enabled: false,
                reserve_tokens: 100,
                keep_recent_tokens: 5
            }
        );
    }

    #[test]
    fn values_pi_throws_on_become_warnings() {
        let s = settings(
            json!({"httpIdleTimeoutMs": "soon", "compaction": {"reserveTokens": -1,
            "modelOverrides": {"p/m": 3, "p/n": {"keepRecentTokens": 1.5}}}}),
        );
        assert_eq!(s.warnings, ["Invalid httpIdleTimeoutMs setting: soon"]);
        assert_eq!(s.http_idle_timeout_ms, DEFAULT_HTTP_IDLE_TIMEOUT_MS);
        let (c, w) = s.compaction_for(Some("p/m"));
        assert_eq!(c.reserve_tokens, 16384);
        assert_eq!(
            w,
            [
                "Invalid compaction.reserveTokens setting: -1. Expected a non-negative safe integer.",
                "Invalid compaction.modelOverrides[\"p/m\"] setting: 3. Expected an object.",
                "Invalid compaction.modelOverrides[\"p/m\"] setting: 3. Expected an object.",
            ]
        );
        let (_, w) = s.compaction_for(Some("p/n"));
        assert_eq!(
            w[1],
            "Invalid compaction.modelOverrides[\"p/n\"].keepRecentTokens setting: 1.5. Expected a non-negative safe integer."
        );
    }
}
