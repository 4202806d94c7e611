//! The `models` global of codemode scripts (`docs/codemode.md`, "Models"): the model catalog by
//! type, and classifier and image calls with the session's credentials. Calls are checked here
//! with Pi's error texts before they reach the provider; at most four classifier or image calls
//! of one script run at once (the rest wait in call order); each appears as a nested call row,
//! and its usage is added to the `codemode` result.

use serde_json::{Map, Value, json};
use std::future::Future;
use std::pin::Pin;
use tokio_util::sync::CancellationToken;

/// `classify()` and `generateImages()` calls one script may have in flight.
pub const MAX_CONCURRENT_MODEL_CALLS: usize = 4;
const MODEL_TYPES: [&str; 3] = ["chat", "image", "classifier"];

/// What `models.*` needs from the session: the registry and the wire APIs.
pub trait ModelsHost: Send + Sync {
    /// Every known model of a type, optionally of one provider.
    fn models_of_type(&self, model_type: &str, provider: Option<&str>) -> Vec<Map<String, Value>>;
    /// The models of a type whose provider has working credentials.
    fn available_of_type(
        &self,
        model_type: &str,
        provider: Option<&str>,
    ) -> Vec<Map<String, Value>>;
    /// Runs a classifier (a resolved catalog entry) with the provider's credentials; never
    /// fails: problems are `stopReason: "error"` results.
    fn classify(
        &self,
        model: Map<String, Value>,
        context: Value,
        cancel: CancellationToken,
    ) -> Pin<Box<dyn Future<Output = Value> + Send + 'static>>;
    /// Runs an image model, like [`ModelsHost::classify`].
    fn generate_images(
        &self,
        model: Map<String, Value>,
        context: Value,
        cancel: CancellationToken,
    ) -> Pin<Box<dyn Future<Output = Value> + Send + 'static>>;
    /// `<package>/docs/codemode.md`, which the context errors point to.
    fn docs_path(&self) -> String;
}

/// `an image`, `a classifier`.
fn with_article(word: &str) -> String {
    if word.starts_with(['a', 'e', 'i', 'o', 'u']) {
        format!("an {word}")
    } else {
        format!("a {word}")
    }
}

/// A script value in an error message: `undefined`, `a string`, `an array`, or its keys.
/// `None` is an argument the script left out.
pub(crate) fn describe(value: Option<&Value>) -> String {
    match value {
        None => "undefined".into(),
        Some(Value::Null) => "null".into(),
        Some(Value::Array(a)) if a.is_empty() => "an empty array".into(),
        Some(Value::Array(_)) => "an array".into(),
        Some(Value::Object(o)) if o.is_empty() => "{}".into(),
        Some(Value::Object(o)) => {
            let keys: Vec<&str> = o.keys().take(6).map(String::as_str).collect();
            let more = if o.len() > 6 { ", ..." } else { "" };
            format!("{{ {}{more} }}", keys.join(", "))
        }
        Some(Value::String(_)) => "a string".into(),
        Some(Value::Number(_)) => "a number".into(),
        Some(Value::Bool(_)) => "a boolean".into(),
    }
}

fn model_type(value: Option<&Value>) -> Result<&'static str, String> {
    if let Some(Value::String(s)) = value
        && let Some(t) = MODEL_TYPES.iter().find(|t| **t == s)
    {
        return Ok(t);
    }
    let shown = match value {
        None => "undefined".to_string(),
        Some(v) => pi_js::json::to_js_string(v).unwrap_or_default(),
    };
    Err(format!(
        "Unknown model type {shown}. Use \"chat\", \"image\", or \"classifier\"."
    ))
}

fn provider_arg(value: Option<&Value>) -> Result<Option<&str>, String> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err("provider must be a string".into()),
    }
}

/// A catalog entry for scripts: `headers` dropped, since models.json headers can carry
/// credentials.
fn info(mut model: Map<String, Value>) -> Value {
    model.remove("headers");
    Value::Object(model)
}

const CLASSIFIER_CONTEXT_SHAPE: &str = "{ state: { ... }, images?: [{ type: \"image\", data: <base64>, mimeType }], questions: { <id>: { type: \"choice\", instructions, criteria: { <label>: <meaning> } } | { type: \"score\", instructions, criteria: [<lowest level>, ..., <highest level>] } | { type: \"bool\", instructions, criteria: { true: <meaning>, false: <meaning> } } } }";

fn is_plain_object(v: Option<&Value>) -> bool {
    matches!(v, Some(Value::Object(_)))
}

/// Pi's check of a classifier context, so mistakes fail with the expected shape instead of a
/// provider error.
pub(crate) fn check_classifier_context(context: Option<&Value>, docs: &str) -> Result<(), String> {
    let fail = |problem: String| {
        format!(
            "models.classify() {problem}. Expected context: {CLASSIFIER_CONTEXT_SHAPE}. See \"Classify\" in {docs}."
        )
    };
    let Some(Value::Object(ctx)) = context else {
        return Err(fail(format!(
            "expects a context object as its second argument, got {}",
            describe(context)
        )));
    };
    let state = ctx.get("state");
    if !is_plain_object(state) {
        return Err(fail(format!(
            "context.state must be an object, got {}",
            describe(state)
        )));
    }
    if let Some(images) = ctx.get("images") {
        let Value::Array(list) = images else {
            return Err(fail(format!(
                "context.images must be an array, got {}",
                describe(Some(images))
            )));
        };
        for (i, image) in list.iter().enumerate() {
            let ok = image["type"] == "image"
                && image["data"].is_string()
                && image["mimeType"].is_string();
            if !ok {
                return Err(fail(format!(
                    "context.images[{i}] must be an image block, got {}",
                    describe(Some(image))
                )));
            }
        }
    }
    let questions = ctx.get("questions");
    let Some(Value::Object(qs)) =
        questions.filter(|q| q.as_object().is_some_and(|o| !o.is_empty()))
    else {
        return Err(fail(format!(
            "context.questions must map question IDs to questions, got {}",
            describe(questions)
        )));
    };
    let strings = |values: Vec<&Value>| !values.is_empty() && values.iter().all(|v| v.is_string());
    for (id, question) in qs {
        let at = format!("context.questions.{id}");
        let Value::Object(q) = question else {
            return Err(fail(format!(
                "{at} must be a question object, got {}",
                describe(Some(question))
            )));
        };
        if !q.get("instructions").is_some_and(Value::is_string) {
            return Err(fail(format!("{at}.instructions must be a string")));
        }
        let criteria = q.get("criteria");
        match q.get("type").and_then(Value::as_str) {
            Some("choice") => {
                let ok =
                    matches!(criteria, Some(Value::Object(c)) if strings(c.values().collect()));
                if !ok {
                    return Err(fail(format!(
                        "{at} is a \"choice\" question, so criteria must map each label to its meaning"
                    )));
                }
            }
            Some("score") => {
                let ok = matches!(criteria, Some(Value::Array(c)) if strings(c.iter().collect()));
                if !ok {
                    return Err(fail(format!(
                        "{at} is a \"score\" question, so criteria must list the levels as strings, lowest first"
                    )));
                }
            }
            Some("bool") => {
                let ok = matches!(criteria, Some(Value::Object(c)) if c.get("true").is_some_and(Value::is_string) && c.get("false").is_some_and(Value::is_string));
                if !ok {
                    return Err(fail(format!(
                        "{at} is a \"bool\" question, so criteria must be {{ true: string, false: string }}"
                    )));
                }
            }
            _ => {
                let shown = match q.get("type") {
                    None => "undefined".to_string(),
                    Some(v) => pi_js::json::to_js_string(v).unwrap_or_default(),
                };
                return Err(fail(format!(
                    "{at}.type must be \"choice\", \"score\", or \"bool\", got {shown}"
                )));
            }
        }
    }
    Ok(())
}

/// Pi's check of an image context, so mistakes such as `{ prompt }` fail with the expected shape.
pub(crate) fn check_images_context(context: Option<&Value>, docs: &str) -> Result<(), String> {
    let fail = |problem: String| {
        format!(
            "models.generateImages() {problem}. Expected context: {{ input: [{{ type: \"text\", text: <prompt> }}, ...optional {{ type: \"image\", data: <base64>, mimeType }} references] }}. See \"Generate images\" in {docs}."
        )
    };
    let Some(Value::Object(ctx)) = context else {
        return Err(fail(format!(
            "expects a context object as its second argument, got {}",
            describe(context)
        )));
    };
    let input = ctx.get("input");
    let Some(Value::Array(blocks)) = input.filter(|i| i.as_array().is_some_and(|a| !a.is_empty()))
    else {
        return Err(fail(format!(
            "context.input must be a non-empty array of blocks, got {}",
            describe(input)
        )));
    };
    for (i, b) in blocks.iter().enumerate() {
        let text = b["type"] == "text" && b["text"].is_string();
        let image = b["type"] == "image" && b["data"].is_string() && b["mimeType"].is_string();
        if !text && !image {
            return Err(fail(format!(
                "context.input[{i}] must be a text or image block, got {}",
                describe(Some(b))
            )));
        }
    }
    Ok(())
}

/// `combineUsage`: two usages added field by field.
pub(crate) fn combine_usage(a: &Value, b: &Value) -> Value {
    let n = |v: &Value, k: &str| v[k].as_f64().unwrap_or(0.0);
    let int = |x: f64| crate::codemode_models::num(x);
    let mut out = Map::new();
    for k in ["input", "output", "cacheRead", "cacheWrite"] {
        out.insert(k.into(), int(n(a, k) + n(b, k)));
    }
    for k in ["cacheWrite1h", "reasoning"] {
        if a.get(k).is_some() || b.get(k).is_some() {
            out.insert(k.into(), int(n(a, k) + n(b, k)));
        }
    }
    out.insert(
        "totalTokens".into(),
        int(n(a, "totalTokens") + n(b, "totalTokens")),
    );
    let (ca, cb) = (&a["cost"], &b["cost"]);
    let mut cost = Map::new();
    for k in ["input", "output", "cacheRead", "cacheWrite", "total"] {
        cost.insert(k.into(), json!(n(ca, k) + n(cb, k)));
    }
    cost.insert(
        "totalFromProvider".into(),
        json!(ca["totalFromProvider"] == true && cb["totalFromProvider"] == true),
    );
    out.insert("cost".into(), Value::Object(cost));
    Value::Object(out)
}

/// A count as JavaScript prints it.
pub(crate) fn num(x: f64) -> Value {
    if x.fract() == 0.0 && x.abs() < 9.0e15 {
        json!(x as i64)
    } else {
        json!(x)
    }
}

/// The list, lookup and argument-checking half of `models.*`; the calls themselves run in
/// [`crate::codemode`], which records them.
pub(crate) enum Method {
    /// Answered at once.
    Value(Value),
    /// A checked classifier or image call: `(name, resolved model, context)`.
    Call(&'static str, Map<String, Value>, Value),
}

pub(crate) fn prepare(
    host: &dyn ModelsHost,
    method: &str,
    args: &[Value],
) -> Result<Method, String> {
    let arg = |i: usize| args.get(i);
    match method {
        "getModelsOfType" => {
            let t = model_type(arg(0))?;
            let p = provider_arg(arg(1))?;
            Ok(Method::Value(Value::Array(
                host.models_of_type(t, p).into_iter().map(info).collect(),
            )))
        }
        "getAvailableOfType" => {
            let t = model_type(arg(0))?;
            let p = provider_arg(arg(1))?;
            Ok(Method::Value(Value::Array(
                host.available_of_type(t, p).into_iter().map(info).collect(),
            )))
        }
        "getModelOfType" => {
            let (Some(Value::String(provider)), Some(Value::String(id))) = (arg(1), arg(2)) else {
                let shown: Vec<String> = args.iter().map(|a| describe(Some(a))).collect();
                return Err(format!(
                    "models.getModelOfType(type, provider, id) expects three strings, got ({}). The provider and the id are separate arguments, for example models.getModelOfType(\"classifier\", \"typesafe\", \"jev-latest\").",
                    shown.join(", ")
                ));
            };
            let t = model_type(arg(0))?;
            Ok(Method::Value(
                find(host, t, provider, id).map(info).unwrap_or(Value::Null),
            ))
        }
        "classify" => resolve(host, "models.classify", "classifier", args),
        "generateImages" => resolve(host, "models.generateImages", "image", args),
        other => Err(format!("models.{other} is not a function")),
    }
}

fn find(host: &dyn ModelsHost, t: &str, provider: &str, id: &str) -> Option<Map<String, Value>> {
    host.models_of_type(t, Some(provider))
        .into_iter()
        .find(|m| m.get("id").and_then(Value::as_str) == Some(id))
}

/// Resolves the script's model by provider and id only (a script-supplied `baseUrl` or
/// `headers` must never receive the credentials), then checks the context.
fn resolve(
    host: &dyn ModelsHost,
    name: &'static str,
    t: &'static str,
    args: &[Value],
) -> Result<Method, String> {
    let list_hint =
        format!("List the {t} models you can use with models.getAvailableOfType(\"{t}\").");
    let given = args.first();
    let (Some(provider), Some(id)) = (
        given
            .and_then(|g| g.get("provider"))
            .and_then(Value::as_str),
        given.and_then(|g| g.get("id")).and_then(Value::as_str),
    ) else {
        let undefined_hint = if matches!(given, None | Some(Value::Null)) {
            " models.getModelOfType() returns undefined for an unknown provider or id."
        } else {
            ""
        };
        return Err(format!(
            "{name}() expects {} model as its first argument, got {}.{undefined_hint} {list_hint}",
            with_article(t),
            describe(given)
        ));
    };
    let reference = format!("{provider}/{id}");
    let Some(resolved) = find(host, t, provider, id) else {
        let actual = MODEL_TYPES
            .iter()
            .find(|other| **other != t && find(host, other, provider, id).is_some());
        return Err(match actual {
            Some(a) => format!(
                "\"{reference}\" is {} model, not {} model. {list_hint}",
                with_article(a),
                with_article(t)
            ),
            None => format!("Unknown {t} model \"{reference}\". {list_hint}"),
        });
    };
    let docs = host.docs_path();
    if t == "classifier" {
        check_classifier_context(args.get(1), &docs)?;
    } else {
        check_images_context(args.get(1), &docs)?;
    }
    Ok(Method::Call(
        name,
        resolved,
        args.get(1).cloned().unwrap_or(Value::Null),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_described_as_pi_describes_them() {
        assert_eq!(describe(None), "undefined");
        assert_eq!(describe(Some(&json!({"prompt": 1}))), "{ prompt }");
        assert_eq!(
            describe(Some(&json!({"a":1,"b":1,"c":1,"d":1,"e":1,"f":1,"g":1}))),
            "{ a, b, c, d, e, f, ... }"
        );
        assert_eq!(describe(Some(&json!([]))), "an empty array");
        assert_eq!(describe(Some(&json!("x"))), "a string");
        assert_eq!(describe(Some(&json!(1))), "a number");
    }

    #[test]
    fn contexts_are_checked_with_the_expected_shape() {
        let e = check_images_context(Some(&json!({"prompt": "fox"})), "D").unwrap_err();
        assert_eq!(
            e,
            "models.generateImages() context.input must be a non-empty array of blocks, got undefined. Expected context: { input: [{ type: \"text\", text: <prompt> }, ...optional { type: \"image\", data: <base64>, mimeType } references] }. See \"Generate images\" in D."
        );
        let e = check_classifier_context(
            Some(&json!({"state": {}, "questions": {"q": {"type": "bool", "instructions": "?", "criteria": ["y", "n"]}}})),
            "D",
        )
        .unwrap_err();
        assert!(e.starts_with("models.classify() context.questions.q is a \"bool\" question, so criteria must be { true: string, false: string }. Expected context: { state:"), "{e}");
        assert!(check_classifier_context(
            Some(&json!({"state": {}, "questions": {"q": {"type": "score", "instructions": "?", "criteria": ["low", "high"]}}})),
            "D"
        )
        .is_ok());
    }

    #[test]
    fn usages_add_up() {
        let u = json!({"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 3, "cost": {"input": 0.5, "output": 0.25, "cacheRead": 0, "cacheWrite": 0, "total": 0.75, "totalFromProvider": false}});
        let sum = combine_usage(&u, &u);
        assert_eq!(sum["totalTokens"], 6);
        assert_eq!(sum["cost"]["total"], json!(1.5));
    }
}
