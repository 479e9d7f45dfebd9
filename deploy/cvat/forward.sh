#!/bin/sh
# nuclio shell handler of deploy/cvat/function.yaml: the event body (CVAT's
# interactor request) comes on standard input; sam2rt serve's answer goes to
# standard output. A refused request keeps serve's {"error": ...} body.
exec curl --silent --show-error --fail-with-body --max-time 55 \
  --header 'Content-Type: application/json' --data-binary @- "${SAM2RT_URL:?set SAM2RT_URL to serve's /cvat/ URL}"
