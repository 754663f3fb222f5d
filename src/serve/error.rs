//! What a request that cannot be answered gets: a status code and one line of JSON, in the
//! shape of the API the route belongs to. OpenAI's (its Python client, and LangChain through
//! it, read `error.message`): `{"error":{"message":"...","type":"...","code":422}}`, on
//! `/v1/*` and everywhere else; text-embeddings-inference's, `{"error":"...",
//! "error_type":"Validation"}`, on its routes ([`TEI_ROUTES`], rewritten by [`tei_shape`]).

use axum::extract::Request;
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// The routes that are text-embeddings-inference's, whose errors take its shape.
pub(crate) const TEI_ROUTES: [&str; 3] = ["/embed", "/embed_all", "/tokenize"];

/// An error answer's parts, carried on the response so that [`tei_shape`] can write them again.
#[derive(Clone)]
struct Parts {
    message: String,
    status: StatusCode,
}

/// An answer other than success.
#[derive(Debug)]
pub(crate) struct ApiError {
    pub status: StatusCode,
    pub kind: &'static str,
    pub message: String,
    /// Seconds, for 429 and 503.
    pub retry_after: Option<u32>,
}

impl ApiError {
    fn new(status: StatusCode, kind: &'static str, message: impl Into<String>) -> Self {
        Self { status, kind, message: message.into(), retry_after: None }
    }

    /// Malformed JSON, an unreadable body: 400.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_request_error", message)
    }

    /// Well-formed JSON that does not make a request (wrong types, empty input, bad
    /// settings): 422.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_request_error", message)
    }

    /// Over a size limit: 413.
    pub fn too_large(message: impl Into<String>) -> Self {
        Self::new(StatusCode::PAYLOAD_TOO_LARGE, "invalid_request_error", message)
    }

    pub fn unauthorized() -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            "authentication_error",
            "missing or wrong API key (send Authorization: Bearer KEY)",
        )
    }

    /// Too many requests admitted: 429, try again in a second.
    pub fn overloaded(limit: usize) -> Self {
        let mut e = Self::new(
            StatusCode::TOO_MANY_REQUESTS,
            "overloaded",
            format!("the server is at its limit of {limit} concurrent requests; retry later"),
        );
        e.retry_after = Some(1);
        e
    }

    /// The request's time ran out: 503.
    pub fn timed_out(seconds: f64) -> Self {
        let mut e = Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "timeout",
            format!("the request was not answered within the server's request timeout ({seconds} s)"),
        );
        e.retry_after = Some(1);
        e
    }

    /// The body did not arrive in time: 408.
    pub fn body_timeout(seconds: f64) -> Self {
        Self::new(
            StatusCode::REQUEST_TIMEOUT,
            "timeout",
            format!("the request body was not received within the server's body timeout ({seconds} s)"),
        )
    }

    /// A model the server does not serve: 404, as OpenAI answers.
    pub fn no_such_model(asked: &str, served: &[&str]) -> Self {
        let names: Vec<String> = served.iter().map(|n| format!("{n:?}")).collect();
        let mut e = Self::new(
            StatusCode::NOT_FOUND,
            "invalid_request_error",
            format!(
                "the model {asked:?} is not served here; this server serves {} (GET /v1/models)",
                names.join(", ")
            ),
        );
        e.kind = "model_not_found";
        e
    }

    pub fn not_found() -> Self {
        Self::new(StatusCode::NOT_FOUND, "invalid_request_error", "no such route")
    }

    pub fn method_not_allowed() -> Self {
        Self::new(StatusCode::METHOD_NOT_ALLOWED, "invalid_request_error", "method not allowed on this route")
    }

    /// The model (or anything else) failed on this request: 500.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "server_error", message)
    }
}

impl From<crate::Error> for ApiError {
    fn from(e: crate::Error) -> Self {
        match e {
            crate::Error::Config(_) | crate::Error::Setting { .. } => Self::invalid(e.to_string()),
            _ => Self::internal(e.to_string()),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let one_line = self.message.replace(['\n', '\r'], " ");
        let body = serde_json::json!({
            "error": {"message": one_line, "type": self.kind, "code": self.status.as_u16()}
        })
        .to_string();
        let mut r =
            (self.status, [(header::CONTENT_TYPE, HeaderValue::from_static("application/json"))], body)
                .into_response();
        if let Some(s) = self.retry_after {
            r.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(s));
        }
        r.extensions_mut().insert(Parts { message: one_line, status: self.status });
        r
    }
}

/// TEI's `error_type` for a status: its `Overloaded` for 429 and 503, `Backend` for a failure
/// of the model, `Validation` for anything the request got wrong.
fn tei_type(status: StatusCode) -> &'static str {
    match status {
        StatusCode::TOO_MANY_REQUESTS | StatusCode::SERVICE_UNAVAILABLE => "Overloaded",
        s if s.is_server_error() => "Backend",
        _ => "Validation",
    }
}

/// On TEI's routes, an error answer in TEI's shape, `{"error", "error_type"}`, with the same
/// status and headers (`Retry-After`, `WWW-Authenticate`, `Connection`); every other answer as
/// it is.
pub(crate) async fn tei_shape(req: Request, next: Next) -> Response {
    let tei = TEI_ROUTES.contains(&req.uri().path());
    let mut r = next.run(req).await;
    if !tei {
        return r;
    }
    if let Some(p) = r.extensions_mut().remove::<Parts>() {
        let body = serde_json::json!({"error": p.message, "error_type": tei_type(p.status)}).to_string();
        r.headers_mut().remove(header::CONTENT_LENGTH);
        *r.body_mut() = axum::body::Body::from(body);
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tei_error_types_follow_the_status() {
        assert_eq!(tei_type(StatusCode::UNPROCESSABLE_ENTITY), "Validation");
        assert_eq!(tei_type(StatusCode::PAYLOAD_TOO_LARGE), "Validation");
        assert_eq!(tei_type(StatusCode::TOO_MANY_REQUESTS), "Overloaded");
        assert_eq!(tei_type(StatusCode::SERVICE_UNAVAILABLE), "Overloaded");
        assert_eq!(tei_type(StatusCode::INTERNAL_SERVER_ERROR), "Backend");
    }
}
