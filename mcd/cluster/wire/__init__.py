"""How mcd reaches the API server: the credentials and TLS a kubeconfig or the in-cluster
service account gives (``kubeconfig``), the connection built from them (``transport``), and
the HTTP/1.1 exchanges of plain requests on kept-alive connections (``http11``; a watch's
stream goes through urllib3).
"""
