package bench

// NginxForwardAuthConf is docs/deploy/forward-auth/nginx.conf, the
// forward-auth configuration waitroom ships for nginx, which the bench runs
// in front of its node (TestShippedNginxConf keeps the two the same).
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

server {
    listen 80;
    server_name shop.example.com;

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
        proxy_set_header Host $host;
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
        proxy_set_header X-Forwarded-Host $http_host;
        proxy_set_header X-Forwarded-Uri $request_uri;
        proxy_set_header X-Forwarded-Proto $scheme;
        proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
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
