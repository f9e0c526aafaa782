#!/bin/sh
# make-bucket: the bucket S3_BUCKET made on the S3 server at S3_ENDPOINT (default
# http://seaweedfs:8333), signed with S3_ACCESS_KEY / S3_SECRET_KEY in S3_REGION (us-east-1);
# one that exists already is left as it is. Compose's one-shot `bucket` runs it.
set -eu
endpoint="${S3_ENDPOINT:-http://seaweedfs:8333}"
: "${S3_BUCKET:?set S3_BUCKET}" "${S3_ACCESS_KEY:?set S3_ACCESS_KEY}" "${S3_SECRET_KEY:?set S3_SECRET_KEY}"
answer="$(mktemp)"
code="$(curl -sS -o "$answer" -w '%{http_code}' -X PUT \
    --aws-sigv4 "aws:amz:${S3_REGION:-us-east-1}:s3" --user "$S3_ACCESS_KEY:$S3_SECRET_KEY" \
    "$endpoint/$S3_BUCKET")"
case "$code" in
    200) echo "make-bucket: made $S3_BUCKET" ;;
    409) grep -q BucketAlreadyOwnedByYou "$answer" || { cat "$answer" >&2; exit 1; }
         echo "make-bucket: $S3_BUCKET exists" ;;
    *) echo "make-bucket: HTTP $code" >&2; cat "$answer" >&2; exit 1 ;;
esac
