package bench

// NginxForwardAuthConf is docs/deploy/forward-auth/nginx.conf, the
// forward-auth configuration waitroom ships for nginx, which the bench runs
// in front of its node (TestShippedNginxConf keeps the two the same).
// NginxAuthCachePath is the directory the shipped file keeps the node's
// answers in, which a test or the bench replaces with one of its own.
const NginxAuthCachePath = "/var/cache/nginx/waitroom"

const NginxForwardAuthConf = `# waitroom behind nginx: nginx asks a waitroom node about every request
# (auth_request) and sends it on to the site only when the node lets it
# through; otherwise the visitor gets the node's answer, the queue page.
#
# Put this in nginx's http {} block and change the three marked addresses.
# Each waitroom node runs with forward_auth.listen (127.0.0.1:9091 below)
# and needs no origin of its own. nginx needs no module beyond the stock
# ones (auth_request, proxy, map).

# The waitroom nodes' forward_auth.listen addresses, one line per node.
upstream waitroom {
    server 127.0.0.1:9091;
    keepalive 32;
}

# The site waitroom protects.
upstream origin {
    server 127.0.0.1:8000;
    keepalive 32;
}

# The node that answered the auth request (the last address, when nginx had
# to try more than one): the queue page is fetched from that node.
map $waitroom_node $waitroom_answer_node {
    "~(?:.*,\s*)?(?<last>[^,\s]+)$" $last;
}

# One request, one host. nginx's $host is the request line's host when the
# line is in absolute form (GET http://site/path), else the Host header's;
# $http_host is the Host header alone. The node is asked about, and the site
# is sent, $host only, and a request whose request line and Host name
# different sites is refused: 1 when the Host header is $host (any case,
# with or without a port).
map "$host $http_host" $waitroom_one_host {
    "~*^(?<h>[^ ]+) \k<h>(:[0-9]+)?$" 1;
    default 0;
}

# Where nginx keeps the node's answers for visitors within their session
# (see the auth location). The directory must be writable by nginx.
proxy_cache_path /var/cache/nginx/waitroom keys_zone=waitroom_auth:10m inactive=10s max_size=64m use_temp_path=off;

server {
    listen 80;
    server_name shop.example.com;

    if ($waitroom_one_host = 0) {
        return 400;
    }

    location / {
        auth_request /.waitroom/auth;
        # Let through: the node's renewed cookie goes to the visitor with
        # the site's answer.
        auth_request_set $waitroom_cookie $upstream_http_set_cookie;
        add_header Set-Cookie $waitroom_cookie always;
        # Not let through: auth_request passes on only 2xx, 401 and 403,
        # so the node answers 401 and keeps its real answer (the queue
        # page, its status, Refresh and cookie) for @waitroom to fetch.
        auth_request_set $waitroom_answer $upstream_http_x_waitroom_answer;
        auth_request_set $waitroom_node $upstream_addr;
        error_page 401 = @waitroom;

        proxy_pass http://origin;
        proxy_http_version 1.1;
        proxy_set_header Connection "";
        # The site gets the host the node decided on, in every header
        # that names one, and no visitor's own word for the host or its
        # address.
        proxy_set_header Host $host;
        proxy_set_header X-Forwarded-Host $host;
        proxy_set_header Forwarded "";
        proxy_set_header X-Real-IP $remote_addr;
        proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
        proxy_set_header X-Forwarded-Proto $scheme;
    }

    # The question: the visitor's request, described in headers.
    location = /.waitroom/auth {
        internal;
        proxy_pass http://waitroom/nginx/auth;
        proxy_http_version 1.1;
        proxy_set_header Connection "";
        proxy_pass_request_body off;
        proxy_set_header Content-Length "";
        proxy_set_header X-Forwarded-Method $request_method;
        proxy_set_header X-Forwarded-Host $host;
        proxy_set_header X-Forwarded-Uri $request_uri;
        proxy_set_header X-Forwarded-Proto $scheme;
        proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
        # A visitor within its session gets the same answer for the same
        # cookie for a moment: the node marks it so (Cache-Control:
        # max-age=2), and nginx keeps it, by the request and its cookies,
        # instead of asking again for each of a page's assets. Every other
        # answer is marked no-store and asked for every time. A revocation
        # or the emergency stop takes hold here at most 2 seconds later.
        proxy_cache waitroom_auth;
        proxy_cache_key "$scheme $request_method $host $request_uri $http_cookie";
        proxy_ignore_headers Set-Cookie;
    }

    # The answer kept by the node that decided, fetched once.
    location @waitroom {
        proxy_pass http://$waitroom_answer_node/nginx/answer/$waitroom_answer;
        proxy_method GET;
        proxy_pass_request_body off;
        proxy_set_header Content-Length "";
        proxy_http_version 1.1;
        proxy_set_header Connection "";
    }
}
`
