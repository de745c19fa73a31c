{{/* The release's name for every object, at most 63 characters. */}}
{{- define "hookline.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "hookline.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "hookline.labels" -}}
{{ include "hookline.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* HOOKLINE_ATTEMPT_TIMEOUT in seconds: whole seconds or minutes only, since the grace period is computed from it. */}}
{{- define "hookline.attemptTimeoutSeconds" -}}
{{- $t := toString (.Values.config.HOOKLINE_ATTEMPT_TIMEOUT | default "15s") -}}
{{- if regexMatch "^[0-9]+s$" $t -}}
{{- trimSuffix "s" $t | atoi -}}
{{- else if regexMatch "^[0-9]+m$" $t -}}
{{- mul (trimSuffix "m" $t | atoi) 60 -}}
{{- else -}}
{{- fail (printf "config.HOOKLINE_ATTEMPT_TIMEOUT %q: this chart needs whole seconds or minutes (15s, 1m) to size terminationGracePeriodSeconds" $t) -}}
{{- end -}}
{{- end -}}

{{/* The port of HOOKLINE_ADDR (":8080"), which the container, probes and Service use. */}}
{{- define "hookline.port" -}}
{{- $p := regexFind "[0-9]+$" (toString (.Values.config.HOOKLINE_ADDR | default ":8080")) -}}
{{- if not $p -}}{{- fail "config.HOOKLINE_ADDR needs a port, such as :8080" -}}{{- end -}}
{{- $p | atoi -}}
{{- end -}}
