"""View models: what each page shows, read from the container's services. No FastAPI here,
so a page's data can be tested, and new data slots in, without a browser or a request."""
