//! The delegation token APIs on a broker listener, as Kafka's `KafkaApis`
//! (`handleCreateTokenRequest`, `handleRenewTokenRequest`, `handleExpireTokenRequest`,
//! `handleDescribeTokensRequest`). Create, Renew and Expire are checked here first — no
//! token API from a token-authenticated session, a PLAINTEXT connection or a one-way SSL one
//! (DELEGATION_TOKEN_REQUEST_NOT_ALLOWED); a token for someone else needs CREATE_TOKENS on
//! that user; renewers must be users — and then forwarded to the controller, which issues
//! them. Describe is answered here from the metadata image, with each token's HMAC derived
//! from `delegation.token.secret.key`.

use kraftd_controller::auth::RequestAuth;
use kraftd_controller::control::acl::RESOURCE_TYPE_USER;
use kraftd_controller::control::delegation_tokens::{
    create_refusal, describe_tokens, token_api_refused, token_requests_allowed,
};
use kraftd_controller::control::DelegationTokenConfig;
use kraftd_controller::publisher::{
    OPERATION_CREATE_TOKENS, OPERATION_DESCRIBE, OPERATION_DESCRIBE_TOKENS,
    RESOURCE_TYPE_DELEGATION_TOKEN,
};
use kraftd_controller::MetadataImage;
use kraftd_net::{KafkaPrincipal, Session};
use kraftd_protocol::messages::{DescribeDelegationTokenRequest, DescribeDelegationTokenResponse};
use kraftd_protocol::{ErrorCode, RequestBody, ResponseBody};

/// The answer to a Create, Renew or Expire that must not be forwarded, if any (Kafka's
/// checks before `forwardToController`).
pub fn refusal_before_forwarding(
    session: &Session,
    auth: &RequestAuth,
    body: &RequestBody,
) -> Option<ResponseBody> {
    let requester = auth.kafka_principal();
    let code = if !token_requests_allowed(requester, Some(session.protocol)) {
        ErrorCode::DelegationTokenRequestNotAllowed
    } else if let RequestBody::CreateDelegationToken(r) = body {
        if let Some(code) = create_refusal(r, requester, |owner| {
            auth.authorize(OPERATION_CREATE_TOKENS, RESOURCE_TYPE_USER, owner)
        }) {
            code
        } else if r
            .renewers
            .iter()
            .any(|p| p.principal_type != KafkaPrincipal::USER_TYPE)
        {
            ErrorCode::InvalidPrincipalType
        } else {
            return None;
        }
    } else {
        return None;
    };
    token_api_refused(body, requester, code)
}

/// DescribeDelegationToken: every token (owners null) or those the named owners own or
/// renew, of which the requester sees its own, those it renews, and others where it has
/// DESCRIBE on the token or DESCRIBE_TOKENS on the owner.
pub fn describe(
    session: &Session,
    auth: &RequestAuth,
    config: &DelegationTokenConfig,
    image: &MetadataImage,
    request: &DescribeDelegationTokenRequest,
) -> DescribeDelegationTokenResponse {
    let requester = auth.kafka_principal();
    let refused = |code: ErrorCode| DescribeDelegationTokenResponse {
        error_code: code.code(),
        ..Default::default()
    };
    if !token_requests_allowed(requester, Some(session.protocol)) {
        return refused(ErrorCode::DelegationTokenRequestNotAllowed);
    }
    if !config.enabled() {
        return refused(ErrorCode::DelegationTokenAuthDisabled);
    }
    let owners: Option<Vec<KafkaPrincipal>> = request.owners.as_ref().map(|owners| {
        owners
            .iter()
            .map(|o| KafkaPrincipal {
                principal_type: o.principal_type.clone(),
                name: o.principal_name.clone(),
                token_authenticated: false,
            })
            .collect()
    });
    let tokens = describe_tokens(
        config,
        image,
        requester,
        owners.as_deref(),
        |token_id| auth.authorize(OPERATION_DESCRIBE, RESOURCE_TYPE_DELEGATION_TOKEN, token_id),
        |owner| {
            auth.authorize(
                OPERATION_DESCRIBE_TOKENS,
                RESOURCE_TYPE_USER,
                &owner.to_string(),
            )
        },
    );
    DescribeDelegationTokenResponse {
        error_code: 0,
        tokens,
        ..Default::default()
    }
}
