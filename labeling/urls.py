"""URL routes of Citelab."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import path

from labeling.views import compare as compare_views
from labeling.views import projects

urlpatterns = [
    path("admin/", admin.site.urls),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("", projects.project_list, name="project_list"),
    path("p/<slug:project_slug>/", projects.project_detail, name="project_detail"),
    path("p/<slug:project_slug>/runs/<str:run_name>/", projects.run_detail, name="run_detail"),
    path("p/<slug:project_slug>/compare/", compare_views.run_compare, name="run_compare"),
    path("p/<slug:project_slug>/compare.xlsx", compare_views.run_compare_xlsx, name="run_compare_xlsx"),
]
