{{/* The release's name for its objects: the release, and the chart's name unless the release already holds it. */}}
{{- define "waitroom.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* The headless Service every node joins through. */}}
{{- define "waitroom.gossipService" -}}
{{- printf "%s-gossip" (include "waitroom.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The labels that select the release's pods. */}}
{{- define "waitroom.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* Every object's labels. */}}
{{- define "waitroom.labels" -}}
{{ include "waitroom.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}
