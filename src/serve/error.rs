//! What a request that cannot be answered gets: a status code and one line of JSON, in the
//! shape the OpenAI API uses (its Python client, and LangChain through it, read
//! `error.message`): `{"error":{"message":"...","type":"...","code":422}}`.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

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
        r
    }
}
