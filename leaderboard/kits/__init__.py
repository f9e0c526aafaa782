"""A challenge's starter kit: what it holds (``contents``), the archive made once per content
version (``archive``), the agent base image as a separate download (``base_image``), and what
the pages and the API share to serve them (``downloads``)."""
