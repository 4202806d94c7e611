//! `extension_ui_request` records: what an extension asks of the client's UI in RPC mode
//! (`RpcExtensionUIRequest`). Dialogs (`select`, `confirm`, `input`, `editor`) wait for an
//! `extension_ui_response` with the same `id`; the other methods are fire-and-forget.
//!
//! Optional keys are omitted when unset: `timeout` only when the extension passed one,
//! `notifyType`, `placeholder`, `prefill`, `widgetPlacement` only when given, `statusText` and
//! `widgetLines` absent when clearing.

use serde::{Deserialize, Serialize};

/// The constant `type` of the record, `"extension_ui_request"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ExtensionUiRequestType;

const REQUEST_TYPE: &str = "extension_ui_request";

impl Serialize for ExtensionUiRequestType {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(REQUEST_TYPE)
    }
}

impl<'de> Deserialize<'de> for ExtensionUiRequestType {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        if s == REQUEST_TYPE {
            Ok(ExtensionUiRequestType)
        } else {
            Err(serde::de::Error::custom(format!(
                "expected type \"{REQUEST_TYPE}\", got \"{s}\""
            )))
        }
    }
}

/// Severity of a `notify` request (the client treats an absent one as `info`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum NotifyType {
    Info,
    Warning,
    Error,
}

/// Where a widget goes (the client treats an absent one as `aboveEditor`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum WidgetPlacement {
    AboveEditor,
    BelowEditor,
}

/// The method-specific part of a request, tagged by `method`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(
    tag = "method",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum UiRequest {
    /// Choose one of `options`; answered with `value` or `cancelled`.
    Select {
        title: String,
        options: Vec<String>,
        /// Milliseconds after which Pi resolves the dialog to its default itself.
        #[serde(
            default,
            skip_serializing_if = "Option::is_none",
            deserialize_with = "crate::num::de_opt_u64"
        )]
        timeout: Option<u64>,
    },
    /// Yes/no; answered with `confirmed` or `cancelled`.
    Confirm {
        title: String,
        message: String,
        #[serde(
            default,
            skip_serializing_if = "Option::is_none",
            deserialize_with = "crate::num::de_opt_u64"
        )]
        timeout: Option<u64>,
    },
    /// Free text; answered with `value` or `cancelled`.
    Input {
        title: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        placeholder: Option<String>,
        #[serde(
            default,
            skip_serializing_if = "Option::is_none",
            deserialize_with = "crate::num::de_opt_u64"
        )]
        timeout: Option<u64>,
    },
    /// Multi-line text (no timeout); answered with `value` or `cancelled`.
    Editor {
        title: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        prefill: Option<String>,
    },
    Notify {
        message: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        notify_type: Option<NotifyType>,
    },
    /// Sets (or, without `statusText`, clears) a status entry.
    SetStatus {
        status_key: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        status_text: Option<String>,
    },
    /// Sets (or, without `widgetLines`, clears) a widget.
    SetWidget {
        widget_key: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        widget_lines: Option<Vec<String>>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        widget_placement: Option<WidgetPlacement>,
    },
    SetTitle {
        title: String,
    },
    /// Replaces the client's input editor text.
    #[serde(rename = "set_editor_text")]
    SetEditorText {
        text: String,
    },
}

/// Every `method` of [`UiRequest`] (a test checks the list against the schema of the enum).
pub const UI_METHODS: &[&str] = &[
    "select",
    "confirm",
    "input",
    "editor",
    "notify",
    "setStatus",
    "setWidget",
    "setTitle",
    "set_editor_text",
];

impl UiRequest {
    /// The `method` string.
    pub fn method(&self) -> &'static str {
        match self {
            UiRequest::Select { .. } => "select",
            UiRequest::Confirm { .. } => "confirm",
            UiRequest::Input { .. } => "input",
            UiRequest::Editor { .. } => "editor",
            UiRequest::Notify { .. } => "notify",
            UiRequest::SetStatus { .. } => "setStatus",
            UiRequest::SetWidget { .. } => "setWidget",
            UiRequest::SetTitle { .. } => "setTitle",
            UiRequest::SetEditorText { .. } => "set_editor_text",
        }
    }

    /// Whether the request waits for an `extension_ui_response`.
    pub fn is_dialog(&self) -> bool {
        matches!(
            self,
            UiRequest::Select { .. }
                | UiRequest::Confirm { .. }
                | UiRequest::Input { .. }
                | UiRequest::Editor { .. }
        )
    }
}

/// `{"type":"extension_ui_request","id":<uuid>,"method":...,<method fields>}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ExtensionUiRequest {
    #[serde(rename = "type")]
    pub kind: ExtensionUiRequestType,
    /// A random UUIDv4, also for fire-and-forget methods.
    pub id: String,
    #[serde(flatten)]
    pub request: UiRequest,
    /// A tool approval's confirm dialog names the call (an addition: absent from every
    /// dialog an extension opens, so the record is Pi's byte for byte).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<crate::additions::ApprovalSubject>,
}

impl ExtensionUiRequest {
    pub fn new(id: impl Into<String>, request: UiRequest) -> ExtensionUiRequest {
        ExtensionUiRequest {
            kind: ExtensionUiRequestType,
            id: id.into(),
            request,
            approval: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pi_js::json::to_js_string;

    #[test]
    fn requests_round_trip() {
        for s in [
            r#"{"type":"extension_ui_request","id":"u","method":"select","title":"Pick","options":["A","B"],"timeout":10000}"#,
            r#"{"type":"extension_ui_request","id":"u","method":"setStatus","statusKey":"k"}"#,
            r#"{"type":"extension_ui_request","id":"u","method":"setWidget","widgetKey":"w","widgetLines":["l1"],"widgetPlacement":"belowEditor"}"#,
            r#"{"type":"extension_ui_request","id":"u","method":"set_editor_text","text":"t"}"#,
        ] {
            let r: ExtensionUiRequest = serde_json::from_str(s).unwrap();
            assert_eq!(to_js_string(&r).unwrap(), s);
        }
        let r = ExtensionUiRequest::new(
            "x",
            UiRequest::Notify {
                message: "m".into(),
                notify_type: None,
            },
        );
        assert_eq!(
            to_js_string(&r).unwrap(),
            r#"{"type":"extension_ui_request","id":"x","method":"notify","message":"m"}"#
        );
        assert!(!r.request.is_dialog());
    }
}
