//! The guards every request passes, as axum middleware, outermost first: metrics (every
//! answer counted, whatever stopped it; `Connection: close` on an error to a request with a
//! body), the API key, admission (429 past `max_concurrent_requests`), the request timeout
//! (503); and [`read_json`], which reads a body under the size limit (413) and the body
//! timeout (408) and parses it (400 for malformed JSON, lone surrogates included; 422 for
//! wrong types or missing fields).

use std::sync::Arc;
use std::time::Instant;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http_body_util::{BodyExt, LengthLimitError, Limited};
use prometheus_client::metrics::gauge::Gauge;
use serde::de::DeserializeOwned;
use subtle::ConstantTimeEq;

use super::error::ApiError;
use super::metrics::{RouteLabel, RouteStatus};
use super::{AppState, ROUTES};

/// Counts the answer by route and status and times it. An error answer to a request that
/// carried a body says `Connection: close`: the body may be unread (a 401, 413 or 429 is
/// decided without reading it), so the connection cannot carry another request, and a
/// client must not try.
pub(crate) async fn record(State(st): State<Arc<AppState>>, req: Request, next: Next) -> Response {
    let path = req.uri().path();
    let route = ROUTES.iter().copied().find(|r| *r == path).unwrap_or("other");
    let has_body = req.headers().contains_key(header::TRANSFER_ENCODING)
        || req
            .headers()
            .get(header::CONTENT_LENGTH)
            .is_some_and(|v| v.to_str().ok().and_then(|n| n.parse::<u64>().ok()) != Some(0));
    let t0 = Instant::now();
    let mut r = next.run(req).await;
    if has_body && !r.status().is_success() {
        r.headers_mut().insert(header::CONNECTION, header::HeaderValue::from_static("close"));
    }
    st.metrics.requests.get_or_create(&RouteStatus { route, status: r.status().as_u16() }).inc();
    st.metrics.latency.get_or_create(&RouteLabel { route }).observe(t0.elapsed().as_secs_f64());
    r
}

/// `Authorization: Bearer KEY` when the server has a key: 401 otherwise. The key is compared
/// as SHA-256 digests in constant time, so neither its bytes nor its length leak through
/// timing.
pub(crate) async fn auth(State(st): State<Arc<AppState>>, req: Request, next: Next) -> Response {
    if let Some(want) = &st.key_digest {
        let given = req
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(|k| digest(k.trim()));
        let ok = given.is_some_and(|g| bool::from(g.ct_eq(want)));
        if !ok {
            let mut r = ApiError::unauthorized().into_response();
            r.headers_mut().insert(header::WWW_AUTHENTICATE, header::HeaderValue::from_static("Bearer"));
            return r;
        }
    }
    next.run(req).await
}

pub(crate) fn digest(key: &str) -> [u8; 32] {
    use sha2::{Digest, Sha256};
    Sha256::digest(key.as_bytes()).into()
}

/// Admits the request if fewer than `max_concurrent_requests` are in the server, and holds
/// its place until the answer is built; 429 with `Retry-After` otherwise.
pub(crate) async fn admit(State(st): State<Arc<AppState>>, req: Request, next: Next) -> Response {
    let Ok(_permit) = st.admission.clone().try_acquire_owned() else {
        return ApiError::overloaded(st.config.limits.max_concurrent_requests).into_response();
    };
    let _counted = InFlight::new(&st.metrics.in_flight);
    next.run(req).await
}

/// One admitted request in the in-flight gauge, until it is answered or dropped.
struct InFlight(Gauge);

impl InFlight {
    fn new(g: &Gauge) -> Self {
        g.inc();
        Self(g.clone())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// The request's whole time, queue and model included: 503 past it. Dropping the handler
/// drops its queued work.
pub(crate) async fn deadline(State(st): State<Arc<AppState>>, req: Request, next: Next) -> Response {
    let limit = st.config.limits.request_timeout;
    match tokio::time::timeout(limit, next.run(req)).await {
        Ok(r) => r,
        Err(_) => ApiError::timed_out(limit.as_secs_f64()).into_response(),
    }
}

/// Read and parse a JSON body under the server's limits.
pub(crate) async fn read_json<T: DeserializeOwned>(st: &AppState, req: Request) -> Result<T, ApiError> {
    let limits = &st.config.limits;
    let max = limits.max_body_bytes;
    let too_large =
        || ApiError::too_large(format!("the request body is over the server's limit of {max} bytes"));
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > max as u64) {
        return Err(too_large());
    }
    let body: Body = req.into_body();
    let read = tokio::time::timeout(limits.body_timeout, Limited::new(body, max).collect()).await;
    let bytes = match read {
        Err(_) => return Err(ApiError::body_timeout(limits.body_timeout.as_secs_f64())),
        Ok(Err(e)) if e.downcast_ref::<LengthLimitError>().is_some() => return Err(too_large()),
        Ok(Err(e)) => return Err(ApiError::bad_request(format!("could not read the request body: {e}"))),
        Ok(Ok(c)) => c.to_bytes(),
    };
    parse_json(&bytes)
}

/// 400 for what is not JSON (or not UTF-8, or holds a lone surrogate); 422 for JSON of the
/// wrong shape.
pub(crate) fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::bad_request("the request body is empty; expected a JSON object"));
    }
    // JSON first (what is not JSON is 400), then the request's shape from it (422, the field
    // named): serde_json reports a wrong type for an enum as a syntax error when it reads the
    // bytes straight into the request.
    let value: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| {
        let m = e.to_string();
        if m.contains("hex escape") || m.contains("surrogate") {
            ApiError::bad_request(format!(
                "invalid JSON: a string holds a lone UTF-16 surrogate escape (\\ud800 to \\udfff without its pair), which is not Unicode text (line {}, column {})",
                e.line(),
                e.column()
            ))
        } else {
            ApiError::bad_request(format!("invalid JSON: {m}"))
        }
    })?;
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let m = crate::spec::in_words(&e.into_inner().to_string());
        let named = if path.is_empty() || path == "." { m } else { format!("{path}: {m}") };
        ApiError::invalid(format!("invalid request: {named}"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, Debug)]
    #[allow(dead_code)]
    struct R {
        input: Vec<String>,
    }

    #[test]
    fn malformed_json_is_400_and_the_wrong_shape_422() {
        let status = |b: &str| parse_json::<R>(b.as_bytes()).unwrap_err().status.as_u16();
        assert_eq!(status("{\"input\": [\"a\""), 400);
        assert_eq!(status(""), 400);
        assert_eq!(status("{\"input\": [\"\\ud800\"]}"), 400); // a lone surrogate
        assert_eq!(status("{\"input\": 5}"), 422);
        assert_eq!(status("{}"), 422);
        assert!(parse_json::<R>(b"{\"input\": [\"\\ud83d\\ude00\"]}").is_ok()); // a pair is fine
    }

    #[test]
    fn keys_compare_by_digest() {
        assert!(bool::from(digest("k1").ct_eq(&digest("k1"))));
        assert!(!bool::from(digest("k1").ct_eq(&digest("k10"))));
    }
}
